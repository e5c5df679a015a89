// `gpumem diff A B`: two real runs on the simulated GPU (B allocates more), two reports, two
// attribution documents (tests/docs/snap.json and a copy whose stacks moved), and the inputs it
// must refuse or explain.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command_runner.hpp"
#include "cli/launchers.hpp"
#include "gpumem/internal/report_document.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

constexpr std::int64_t kDiffMiB = 1 << 20;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// `gpumem run --json PATH` of a simulated workload; the run file's path.
std::string run_workload(const std::string& path, const std::string& workload) {
  const CommandResult run =
      run_command({gpumem_binary(), "run", "--json", path, "--", sim_tool(), "workload", workload});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return path;
}

CommandResult gpumem_diff(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), {gpumem_binary(), "diff"});
  return run_command(arguments);
}

nlohmann::json diff_json_of(std::vector<std::string> arguments, int status = 0) {
  arguments.insert(arguments.end(), {"--json", "-"});
  const CommandResult result = gpumem_diff(arguments);
  EXPECT_EQ(result.exit_code, status) << result.err;
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << "not JSON: " << result.out;
    return {};
  }
}

// A device's entry in a diff's JSON, by CUDA ordinal.
nlohmann::json diff_device(const nlohmann::json& diff, int ordinal) {
  for (const nlohmann::json& device : diff["devices"])
    if (device["device"] == ordinal) return device;
  ADD_FAILURE() << "no device " << ordinal << " in " << diff.dump(2);
  return {};
}

std::int64_t run_peak(const std::string& path, int ordinal) {
  const nlohmann::json run = nlohmann::json::parse(read_file(path));
  for (const auto& device : run["devices"])
    if (device["device"] == ordinal) return device["peak_bytes"];
  ADD_FAILURE() << "no device " << ordinal << " in " << path;
  return -1;
}

// Terminal columns of a line of ASCII and "…" (UTF-8's continuation bytes take none).
std::size_t diff_columns(const std::string& line) {
  std::size_t columns = 0;
  for (unsigned char byte : line) columns += (byte & 0xC0) != 0x80;
  return columns;
}

// Two runs of a workload, the second allocating 50 MiB more on GPU 0 (the H200: the simulator's
// CUDA order puts it first), on the two-GPU simulated machine.
class DiffRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new std::string(temporary_folder());
    SimGpu gpu;
    run_workload(before(), "alloc a 100MiB; sleep 50ms");
    run_workload(after(), "alloc a 100MiB; alloc b 50MiB; sleep 50ms");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*folder_);
    delete folder_;
  }
  static std::string before() { return *folder_ + "/before.json"; }
  static std::string after() { return *folder_ + "/after.json"; }
  static std::string folder() { return *folder_; }

 private:
  static std::string* folder_;
};
std::string* DiffRuns::folder_ = nullptr;

TEST_F(DiffRuns, ThePeakGrowthOfEachDeviceToTheByte) {
  ASSERT_EQ(run_peak(before(), 0), 100 * kDiffMiB);
  ASSERT_EQ(run_peak(after(), 0), 150 * kDiffMiB);
  const nlohmann::json diff = diff_json_of({before(), after()});
  EXPECT_EQ(diff["schema"], "gpumem.diff/1");
  EXPECT_EQ(diff["inputs"], "gpumem.run/1");
  EXPECT_EQ(diff["before"], before());
  EXPECT_EQ(diff["after"], after());
  ASSERT_EQ(diff["devices"].size(), 2u);
  const nlohmann::json& grown = diff["devices"][0];  // most growth first
  EXPECT_EQ(grown["device"], 0);
  EXPECT_EQ(grown["name"], "NVIDIA H200");
  EXPECT_EQ(grown["uuid"], "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(grown["matched_by"], "uuid");
  EXPECT_EQ(grown["before_bytes"], 100 * kDiffMiB);
  EXPECT_EQ(grown["after_bytes"], 150 * kDiffMiB);
  EXPECT_EQ(grown["delta_bytes"], 50 * kDiffMiB);
  EXPECT_EQ(grown["percent"], 50.0);
  EXPECT_EQ(grown["change"], "grew");
  const nlohmann::json& idle = diff["devices"][1];
  EXPECT_EQ(idle["device"], 1);
  EXPECT_EQ(idle["after_bytes"], 0);
  EXPECT_EQ(idle["delta_bytes"], 0);
  EXPECT_TRUE(idle["percent"].is_null());
  EXPECT_EQ(idle["change"], "unchanged");
  EXPECT_TRUE(diff["ranks"].empty());
  EXPECT_TRUE(diff["stacks"].is_null());
  EXPECT_TRUE(diff["fail_above"].is_null());
  EXPECT_TRUE(diff["notes"].empty());

  // The other way round it shrank, by a third.
  const nlohmann::json back = diff_json_of({after(), before()});
  EXPECT_EQ(back["devices"][0]["device"], 1);  // unchanged sorts above a shrink
  EXPECT_EQ(diff_device(back, 0)["delta_bytes"], -50 * kDiffMiB);
  EXPECT_EQ(diff_device(back, 0)["percent"], -33.33);
  EXPECT_EQ(diff_device(back, 0)["change"], "shrank");
}

TEST_F(DiffRuns, TheTableFitsTheWidthAndNamesHowDevicesMatched) {
  const CommandResult wide = gpumem_diff({before(), after(), "--wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  // "A -> B" or "A → B", as the locale allows.
  const std::string first = wide.out.substr(0, wide.out.find('\n'));
  EXPECT_TRUE(first.starts_with(before() + " ")) << first;
  EXPECT_TRUE(first.ends_with(" " + after() + " (gpumem.run/1)")) << first;
  EXPECT_NE(wide.out.find("PEAK PER DEVICE"), std::string::npos) << wide.out;
  const std::size_t row = wide.out.find("GPU 0 (NVIDIA H200)");
  ASSERT_NE(row, std::string::npos) << wide.out;
  const std::string line = wide.out.substr(row, wide.out.find('\n', row) - row);
  EXPECT_NE(line.find("100.0 MiB  150.0 MiB  +50.0 MiB  +50.0%  by uuid"), std::string::npos)
      << line;
  const CommandResult narrow = gpumem_diff({before(), after(), "--width", "40"});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  std::istringstream lines(narrow.out);
  for (std::string each; std::getline(lines, each);) EXPECT_LE(diff_columns(each), 40u) << each;
  EXPECT_NE(narrow.out.find("+50.0 MiB"), std::string::npos) << narrow.out;
  EXPECT_EQ(narrow.out.find("MATCHED"), std::string::npos) << narrow.out;
}

TEST_F(DiffRuns, FailAboveIsStatus3WhenAPeakGrewByMore) {
  for (const char* limit : {"5%", "49.9%", "10MiB"}) {
    const CommandResult result = gpumem_diff({before(), after(), "--fail-above", limit});
    EXPECT_EQ(result.exit_code, 3) << limit << "\n" << result.err;
    EXPECT_NE(result.err.find("gpumem diff: GPU 0 (NVIDIA H200) grew 50.0 MiB (+50.0%): over "
                              "--fail-above " +
                              std::string(limit)),
              std::string::npos)
        << result.err;
  }
  for (const char* limit : {"50%", "60%", "50MiB", "256MiB"}) {
    const CommandResult result = gpumem_diff({before(), after(), "--fail-above", limit});
    EXPECT_EQ(result.exit_code, 0) << limit << "\n" << result.err;
    EXPECT_EQ(result.err, "") << limit;
  }
  // A shrink never fails.
  EXPECT_EQ(gpumem_diff({after(), before(), "--fail-above", "0%"}).exit_code, 0);
  const nlohmann::json verdict =
      diff_json_of({before(), after(), "--fail-above", "52428799B"}, 3)["fail_above"];
  EXPECT_EQ(verdict["threshold"], "52428799B");
  EXPECT_EQ(verdict["bytes"], 50 * kDiffMiB - 1);
  EXPECT_TRUE(verdict["percent"].is_null());
  EXPECT_EQ(verdict["exceeded"], true);
  EXPECT_EQ(verdict["devices"], nlohmann::json::array({"GPU 0 (NVIDIA H200)"}));
  EXPECT_EQ(diff_json_of({before(), after(), "--fail-above", "50%"})["fail_above"]["exceeded"],
            false);
}

TEST_F(DiffRuns, UsageErrorsAreStatus2) {
  for (const std::vector<std::string>& arguments : {std::vector<std::string>{before()},
                                                    {before(), after(), "--fail-above", "lots"},
                                                    {before(), after(), "--fail-above", "5"},
                                                    {before(), after(), "--fail-above", "-5%"},
                                                    {before(), after(), "--width", "3"},
                                                    {before(), after(), "--json", "/dev/null"}}) {
    const CommandResult result = gpumem_diff(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments.back() << "\n" << result.err;
    EXPECT_EQ(result.out, "");
  }
  const CommandResult unit = gpumem_diff({before(), after(), "--fail-above", "5"});
  EXPECT_NE(unit.err.find("--fail-above 5: no unit"), std::string::npos) << unit.err;
}

TEST_F(DiffRuns, AGpuInOneRunOnlyIsNamedAndAnotherMachinesGpuMatchesByOrdinal) {
  // B on a machine with only the H200: the A100 is in A only.
  const std::string one = folder() + "/one-gpu.json";
  {
    SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200",
      "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001", "total_mib": 143771}]})");
    run_workload(one, "alloc a 120MiB; sleep 50ms");
  }
  nlohmann::json diff = diff_json_of({before(), one});
  ASSERT_EQ(diff["devices"].size(), 2u);
  EXPECT_EQ(diff_device(diff, 0)["delta_bytes"], 20 * kDiffMiB);
  EXPECT_EQ(diff_device(diff, 0)["matched_by"], "uuid");
  EXPECT_EQ(diff_device(diff, 1)["change"], "vanished");
  EXPECT_TRUE(diff_device(diff, 1)["after_bytes"].is_null());
  EXPECT_TRUE(diff_device(diff, 1)["matched_by"].is_null());
  EXPECT_EQ(diff["notes"],
            nlohmann::json::array({"GPU 1 (NVIDIA A100-SXM4-40GB) [GPU-aaaaaaaa-1111-4000-8000-"
                                   "000000000000] is only in before.json"}));
  const CommandResult text = gpumem_diff({before(), one, "--wide"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("note: GPU 1 (NVIDIA A100-SXM4-40GB) [GPU-aaaaaaaa-1111-4000-8000-"
                          "000000000000] is only in before.json\n"),
            std::string::npos)
      << text.out;

  // Another machine's GPU: no UUID in common, matched by its ordinal, and said so.
  const std::string other = folder() + "/other-machine.json";
  {
    SimGpu gpu(R"({"devices": [{"name": "NVIDIA B200",
      "uuid": "GPU-cccccccc-3333-4000-8000-000000000002", "total_mib": 183359}]})");
    run_workload(other, "alloc a 80MiB; sleep 50ms");
  }
  diff = diff_json_of({one, other});
  ASSERT_EQ(diff["devices"].size(), 1u);
  EXPECT_EQ(diff["devices"][0]["matched_by"], "ordinal");
  EXPECT_EQ(diff["devices"][0]["before_bytes"], 120 * kDiffMiB);
  EXPECT_EQ(diff["devices"][0]["after_bytes"], 80 * kDiffMiB);
  EXPECT_EQ(diff["notes"],
            nlohmann::json::array(
                {"GPU 0 (NVIDIA B200) matched by ordinal: its UUID differs "
                 "(GPU-bbbbbbbb-2222-4000-8000-000000000001 in one-gpu.json, "
                 "GPU-cccccccc-3333-4000-8000-000000000002 in other-machine.json)",
                 "GPU 0 (NVIDIA B200) is a NVIDIA H200 in one-gpu.json, a NVIDIA B200 in "
                 "other-machine.json"}));
}

TEST_F(DiffRuns, TwoReportsCompareTheirDevices) {
  const std::string a = folder() + "/report-a.json", b = folder() + "/report-b.json";
  ASSERT_EQ(run_command({gpumem_binary(), "report", before(), "--json", a}).exit_code, 0);
  ASSERT_EQ(run_command({gpumem_binary(), "report", after(), "--json", b}).exit_code, 0);
  const nlohmann::json diff = diff_json_of({a, b});
  EXPECT_EQ(diff["inputs"], "gpumem.report/1");
  EXPECT_EQ(diff_device(diff, 0)["before_bytes"], 100 * kDiffMiB);
  EXPECT_EQ(diff_device(diff, 0)["after_bytes"], 150 * kDiffMiB);
  EXPECT_EQ(diff_device(diff, 0)["matched_by"], "uuid");
  // A report against a run file: two kinds.
  const CommandResult mixed = gpumem_diff({a, after()});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_EQ(mixed.err, "gpumem diff: " + after() + " is a run file (gpumem.run/1), " + a +
                           " a report (gpumem.report/1): gpumem diff compares two of a kind (two "
                           "run files, two reports or two attribution documents; --attribute "
                           "A.json B.json adds attribution to two run files)\n");
}

TEST_F(DiffRuns, WhatIsNotARunOrADocumentIsNamedInOneLine) {
  const std::string dir = folder();
  write_text(dir + "/plain.json", R"({"hello": [1, 2]})");
  write_text(dir + "/text.txt", "peak: 12 GiB\n");
  write_text(dir + "/other.json", R"({"schema": "acme.metrics/3", "x": 1})");
  write_text(dir + "/future.json", R"({"schema": "gpumem.run/9"})");
  write_text(dir + "/empty.json", "");
  auto error_of = [&](const std::string& path) {
    const CommandResult result = gpumem_diff({before(), path});
    EXPECT_EQ(result.exit_code, 1) << path;
    EXPECT_EQ(result.out, "");
    return result.err;
  };
  const std::string reads =
      "gpumem diff reads run files (gpumem.run/1), reports (gpumem.report/1), attribution "
      "documents (gpumem.attribution/1) and PyTorch memory snapshots";
  EXPECT_EQ(error_of(dir + "/plain.json"),
            "gpumem diff: " + dir + "/plain.json: no \"schema\": not a gpumem document (" + reads +
                ")\n");
  EXPECT_EQ(error_of(dir + "/text.txt"),
            "gpumem diff: " + dir + "/text.txt: not JSON: " + reads + "\n");
  EXPECT_EQ(error_of(dir + "/other.json"), "gpumem diff: " + dir +
                                               "/other.json: schema acme.metrics/3 is none "
                                               "gpumem diff compares (" +
                                               reads + ")\n");
  EXPECT_NE(error_of(dir + "/future.json")
                .find("schema gpumem.run/9 is a version this gpumem "
                      "does not read"),
            std::string::npos);
  EXPECT_EQ(error_of(dir + "/empty.json"),
            "gpumem diff: " + dir + "/empty.json: empty (a run still writing it, or cut short?)\n");
  EXPECT_EQ(error_of(dir + "/missing.json"),
            "gpumem diff: " + dir + "/missing.json: No such file or directory\n");
}

TEST(DiffReportReader, ABadFieldIsNamedWithTheFile) {
  const std::string good = R"({"schema": "gpumem.report/1", "mode": "exact", "ranks": [],
    "devices": [{"key": "k", "uuid": null, "node": "n", "device": 0, "name": "GPU",
                 "peak_bytes": 5}]})";
  std::string error;
  const auto report = run::parse_report_document(good, "r.json", &error);
  ASSERT_TRUE(report) << error;
  ASSERT_EQ(report->devices.size(), 1u);
  EXPECT_EQ(report->devices[0].peak_bytes, 5);
  EXPECT_EQ(report->devices[0].node, "n");
  EXPECT_EQ(report->devices[0].uuid, "");
  auto error_of = [](const std::string& text) {
    std::string why;
    EXPECT_FALSE(run::parse_report_document(text, "r.json", &why)) << text;
    return why;
  };
  EXPECT_EQ(error_of(R"({"schema": "gpumem.report/1", "mode": "exact", "ranks": []})"),
            "r.json: devices: missing");
  EXPECT_EQ(error_of(R"({"schema": "gpumem.report/1", "mode": "exact", "ranks": [],
    "devices": [{"key": "k", "uuid": null, "node": "n", "device": 0, "name": "GPU",
                 "peak_bytes": -1}]})"),
            "r.json: devices[0].peak_bytes: expected a number of bytes, found -1");
  EXPECT_EQ(error_of(R"({"schema": "gpumem.report/2"})"),
            "r.json: schema gpumem.report/2 is a version this gpumem does not read (it reads "
            "gpumem.report/1)");
}

// A torchrun job of `ranks` workers, each on its own GPU; rank R allocates `sizes[R]` MiB.
std::string run_ranks(const std::string& path, const std::vector<int>& sizes) {
  std::string sizes_case;
  for (std::size_t rank = 0; rank < sizes.size(); ++rank)
    sizes_case += std::to_string(rank) + ") size=" + std::to_string(sizes[rank]) + " ;; ";
  const std::string worker = "case $RANK in " + sizes_case + "esac; exec '" + sim_tool() +
                             "' workload \"alloc w ${size}MiB; sleep 200ms\"";
  const CommandResult run = run_command(
      {gpumem_binary(), "run", "--json", path, "-i", "0.005", "--", launcher("fake-torchrun"),
       "--nproc-per-node", std::to_string(sizes.size()), "--gpus", "2", "sh", "-c", worker});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return path;
}

TEST(DiffRanks, EachRanksPeakChangeAndTheRanksInOneRunOnly) {
  const std::string folder = temporary_folder();
  const std::string a = folder + "/two.json", b = folder + "/three.json";
  {
    SimGpu gpu;
    run_ranks(a, {100, 200});
    run_ranks(b, {100, 260, 40});
  }
  const nlohmann::json diff = diff_json_of({a, b});
  ASSERT_EQ(diff["ranks"].size(), 3u) << diff.dump(2);
  const nlohmann::json& grown = diff["ranks"][0];
  EXPECT_EQ(grown["rank"], 1);
  EXPECT_EQ(grown["local_rank"], 1);
  EXPECT_TRUE(grown["node"].is_null());
  EXPECT_EQ(grown["before_bytes"], 200 * kDiffMiB);
  EXPECT_EQ(grown["after_bytes"], 260 * kDiffMiB);
  EXPECT_EQ(grown["delta_bytes"], 60 * kDiffMiB);
  EXPECT_EQ(grown["percent"], 30.0);
  EXPECT_EQ(diff["ranks"][1]["rank"], 2);
  EXPECT_EQ(diff["ranks"][1]["change"], "appeared");
  EXPECT_EQ(diff["ranks"][1]["after_bytes"], 40 * kDiffMiB);
  EXPECT_EQ(diff["ranks"][2]["rank"], 0);
  EXPECT_EQ(diff["ranks"][2]["delta_bytes"], 0);
  EXPECT_EQ(diff["notes"], nlohmann::json::array({"the ranks differ: 2 in two.json, 3 in "
                                                  "three.json; only in three.json: rank 2 "
                                                  "(local 2)"}));
  const CommandResult text = gpumem_diff({a, b, "--wide"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("PEAK PER RANK"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 1 (local 1)  200.0 MiB  260.0 MiB  +60.0 MiB  +30.0%"),
            std::string::npos)
      << text.out;
  std::filesystem::remove_all(folder);
}

// tests/docs/snap.json (a peak of 200 MiB: train_step 100 MiB, load_weights 50 MiB, loader
// 20 MiB, 10 MiB without a stack) and tests/docs/snap-later.json, a later run's document: its
// stacks listed in another order (loader, train_step, augment), train_step's line moved (42 to
// 45), train_step holding 130 MiB, load_weights gone and a new stack (augment < train_step <
// main) holding 16 MiB; a peak of 196 MiB.
class DiffDocuments : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = temporary_folder();
    before_ = std::string(GPUMEM_TEST_DOCS) + "/snap.json";
    after_ = std::string(GPUMEM_TEST_DOCS) + "/snap-later.json";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::string folder_, before_, after_;
};

TEST_F(DiffDocuments, StacksMatchByTheirFramesNotTheirIndexOrLine) {
  const nlohmann::json diff = diff_json_of({before_, after_});
  EXPECT_EQ(diff["inputs"], "gpumem.attribution/1");
  ASSERT_EQ(diff["devices"].size(), 1u);
  EXPECT_EQ(diff["devices"][0]["before_bytes"], 200 * kDiffMiB);
  EXPECT_EQ(diff["devices"][0]["after_bytes"], 196 * kDiffMiB);
  EXPECT_EQ(diff["devices"][0]["delta_bytes"], -4 * kDiffMiB);
  EXPECT_EQ(diff["devices"][0]["matched_by"], "uuid");
  ASSERT_EQ(diff["stacks"].size(), 5u) << diff["stacks"].dump(2);
  auto expect_stack = [&](std::size_t at, const char* allocated_by, const char* called_from,
                          nlohmann::json before, nlohmann::json after, std::int64_t delta,
                          const char* change) {
    const nlohmann::json& stack = diff["stacks"][at];
    EXPECT_EQ(stack["allocated_by"], allocated_by) << at;
    EXPECT_EQ(stack["called_from"], called_from) << at;
    EXPECT_EQ(stack["before_bytes"], before) << at;
    EXPECT_EQ(stack["after_bytes"], after) << at;
    EXPECT_EQ(stack["delta_bytes"], delta) << at;
    EXPECT_EQ(stack["change"], change) << at;
  };
  // Most growth first; the later document's line named.
  expect_stack(0, "train_step (train.cpp:45)", "main", 100 * kDiffMiB, 130 * kDiffMiB,
               30 * kDiffMiB, "grew");
  EXPECT_EQ(diff["stacks"][0]["percent"], 30.0);
  EXPECT_EQ(diff["stacks"][0]["before_blocks"], 2);
  EXPECT_EQ(diff["stacks"][0]["after_blocks"], 2);
  expect_stack(1, "augment (data.cpp:3)", "train_step < main", nullptr, 16 * kDiffMiB,
               16 * kDiffMiB, "appeared");
  EXPECT_TRUE(diff["stacks"][1]["percent"].is_null());
  expect_stack(2, "loader (weights.cpp:12)", "load_weights < main", 20 * kDiffMiB, 20 * kDiffMiB, 0,
               "unchanged");
  expect_stack(3, "(no stack captured)", "", 10 * kDiffMiB, 10 * kDiffMiB, 0, "unchanged");
  expect_stack(4, "load_weights (weights.cpp:99)", "main", 50 * kDiffMiB, nullptr, -50 * kDiffMiB,
               "vanished");
}

TEST_F(DiffDocuments, TheTableListsWhatGrewAndWhatVanished) {
  const CommandResult result = gpumem_diff({before_, after_, "--wide"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_NE(out.find("STACK AT THE PEAK"), std::string::npos) << out;
  const std::size_t grew = out.find("train_step (train.cpp:45)");
  const std::size_t appeared = out.find("augment (data.cpp:3)");
  const std::size_t vanished = out.find("load_weights (weights.cpp:99)");
  ASSERT_NE(grew, std::string::npos) << out;
  ASSERT_NE(appeared, std::string::npos) << out;
  ASSERT_NE(vanished, std::string::npos) << out;
  EXPECT_LT(grew, appeared);
  EXPECT_LT(appeared, vanished);
  EXPECT_NE(out.find("+30.0 MiB  +30.0%"), std::string::npos) << out;
  EXPECT_NE(out.find("+16.0 MiB     new"), std::string::npos) << out;
  EXPECT_NE(out.find("-50.0 MiB    gone"), std::string::npos) << out;
  EXPECT_EQ(out.find("loader (weights.cpp:12)"), std::string::npos) << out;  // unchanged
  EXPECT_NE(out.find("2 stacks held the same at both peaks.\n"), std::string::npos) << out;
  const CommandResult narrow = gpumem_diff({before_, after_, "--width", "44"});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  std::istringstream lines(narrow.out);
  for (std::string each; std::getline(lines, each);) EXPECT_LE(diff_columns(each), 44u) << each;
  EXPECT_NE(narrow.out.find("+30.0 MiB  +30.0%"), std::string::npos) << narrow.out;
  EXPECT_NE(narrow.out.find("-50.0 MiB    gone"), std::string::npos) << narrow.out;
}

TEST_F(DiffDocuments, FailAboveAndTheSvg) {
  // The device's peak shrank: no growth fails, however small the limit.
  EXPECT_EQ(gpumem_diff({before_, after_, "--fail-above", "0%"}).exit_code, 0);
  EXPECT_EQ(gpumem_diff({after_, before_, "--fail-above", "2%"}).exit_code, 3);
  EXPECT_EQ(gpumem_diff({after_, before_, "--fail-above", "2.1%"}).exit_code, 0);
  const std::string svg = folder_ + "/diff.svg";
  const CommandResult drawn = gpumem_diff({before_, after_, "--svg", svg});
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  const std::string text = read_file(svg);
  EXPECT_EQ(text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(text.find(">Peak per device</text>"), std::string::npos);
  EXPECT_NE(text.find(">GPU 0 (NVIDIA H200)<title>"), std::string::npos);
  EXPECT_NE(text.find(">train_step (train.cpp:45)<title>"), std::string::npos);
  EXPECT_NE(text.find(">+30.0 MiB (+30.0%)</text>"), std::string::npos);
  EXPECT_NE(text.find(">-50.0 MiB (gone)</text>"), std::string::npos);
  EXPECT_EQ(text.find("loader"), std::string::npos);  // unchanged: no bar
  EXPECT_TRUE(text.ends_with("</svg>\n"));
}

TEST_F(DiffDocuments, ARunFileAgainstADocumentIsRefused) {
  const std::string run = folder_ + "/run.json";
  {
    SimGpu gpu;
    run_workload(run, "alloc a 10MiB; sleep 20ms");
  }
  const CommandResult result = gpumem_diff({run, after_});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "gpumem diff: " + after_ +
                            " is an attribution document (gpumem.attribution/1), " + run +
                            " a run file (gpumem.run/1): gpumem diff compares two of a kind (two "
                            "run files, two reports or two attribution documents; --attribute "
                            "A.json B.json adds attribution to two run files)\n");
  // --attribute adds the documents' stacks to two run files.
  const nlohmann::json diff = diff_json_of({run, run, "--attribute", before_, after_});
  EXPECT_EQ(diff["inputs"], "gpumem.run/1");
  ASSERT_EQ(diff["stacks"].size(), 5u);
  EXPECT_EQ(diff["stacks"][0]["delta_bytes"], 30 * kDiffMiB);
  const CommandResult not_documents = gpumem_diff({run, run, "--attribute", run, after_});
  EXPECT_EQ(not_documents.exit_code, 1);
  EXPECT_EQ(not_documents.err,
            "gpumem diff: --attribute " + run +
                " is a run file (gpumem.run/1), not an attribution document (gpumem run "
                "--attribute writes them)\n");
}

}  // namespace
}  // namespace gpumem::testing
