// `gpumem report`: run files of a job's nodes combined; bad files named and refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "cli/launchers.hpp"
#include "gpumem/internal/report_document.hpp"
#include "job_report.hpp"
#include "report_output.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A second node's GPUs: other UUIDs, another model.
constexpr const char* kNodeB = R"({
  "devices": [
    {"name": "NVIDIA B200", "uuid": "GPU-cccccccc-3333-4000-8000-000000000002", "total_mib": 183359},
    {"name": "NVIDIA B200", "uuid": "GPU-dddddddd-4444-4000-8000-000000000003", "total_mib": 183359}
  ]})";

// One node of a two-node torchrun job under srun: its gpumem run has the task's rank, its
// workers RANK = 2 * node + LOCAL_RANK, each on its own GPU; rank 2 holds the most (450 MiB).
CommandResult run_node(const std::string& folder, const std::string& host, int node) {
  const std::string worker = "exec '" + sim_tool() +
                             "' workload \"alloc w $(( RANK == 2 ? 450 : (RANK + 1) * 100 ))MiB; "
                             "sleep 300ms\"";
  return run_command({"env",
                      "SLURM_PROCID=" + std::to_string(node),
                      gpumem_binary(),
                      "run",
                      "--host",
                      host,
                      "--json",
                      folder + "/run-{host}-{rank}.json",
                      "-i",
                      "0.005",
                      "--",
                      launcher("fake-torchrun"),
                      "--nnodes",
                      "2",
                      "--node-rank",
                      std::to_string(node),
                      "--nproc-per-node",
                      "2",
                      "--gpus",
                      "2",
                      "sh",
                      "-c",
                      worker});
}

TEST(Report, TwoNodesCombineIntoTheJobsMaximumAndItsRank) {
  const std::string folder = temporary_folder();
  std::string modes[2];
  {
    SimGpu gpu;
    const CommandResult a = run_node(folder, "node-a", 0);
    ASSERT_EQ(a.exit_code, 0) << a.err;
  }
  {
    SimGpu gpu(kNodeB);
    const CommandResult b = run_node(folder, "node-b", 1);
    ASSERT_EQ(b.exit_code, 0) << b.err;
  }
  const std::string a = folder + "/run-node-a-0.json", b = folder + "/run-node-b-1.json";
  ASSERT_TRUE(std::filesystem::exists(a));
  ASSERT_TRUE(std::filesystem::exists(b));
  modes[0] = nlohmann::json::parse(read_file(a))["mode"];
  modes[1] = nlohmann::json::parse(read_file(b))["mode"];

  const std::string json = folder + "/job.json", svg = folder + "/job.svg";
  const CommandResult result =
      run_command({gpumem_binary(), "report", "--json", json, "--svg", svg, a, b});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const auto report = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(report["schema"], "gpumem.report/1");
  const auto& maximum = report["maximum"];
  EXPECT_EQ(maximum["peak_bytes"], 450 * MiB) << report.dump(2);
  EXPECT_EQ(maximum["node"], "node-b");
  EXPECT_EQ(maximum["rank"]["rank"], 2);
  EXPECT_EQ(maximum["rank"]["local_rank"], 0);
  EXPECT_EQ(maximum["device_key"], "GPU-cccccccc-3333-4000-8000-000000000002");
  EXPECT_EQ(maximum["name"], "NVIDIA B200");

  ASSERT_EQ(report["ranks"].size(), 4u);
  const std::int64_t rank_peaks[] = {100 * MiB, 200 * MiB, 450 * MiB, 400 * MiB};
  for (int rank = 0; rank < 4; ++rank) {
    const auto& entry = report["ranks"][rank];
    EXPECT_EQ(entry["rank"], rank);
    EXPECT_EQ(entry["node"], rank < 2 ? "node-a" : "node-b");
    EXPECT_EQ(entry["peak_bytes"], rank_peaks[rank]) << entry.dump();
  }
  ASSERT_EQ(report["nodes"].size(), 2u);
  EXPECT_EQ(report["nodes"][0]["node"], "node-a");
  EXPECT_EQ(report["nodes"][0]["peak_bytes"], 200 * MiB);
  EXPECT_EQ(report["nodes"][0]["peak_rank"]["rank"], 1);
  EXPECT_EQ(report["nodes"][0]["ranks"], 2);
  EXPECT_EQ(report["nodes"][0]["devices_used"], 2);
  EXPECT_EQ(report["nodes"][1]["peak_bytes"], 450 * MiB);
  ASSERT_EQ(report["devices"].size(), 4u);  // four UUIDs, none summed
  for (const auto& device : report["devices"]) EXPECT_EQ(device["runs_using"], 1);
  EXPECT_EQ(report["inputs"][0]["mode"], modes[0]);
  EXPECT_EQ(report["inputs"][1]["mode"], modes[1]);
  EXPECT_EQ(report["inputs"][1]["gpumem_rank"], 1);
  const std::string job_mode = modes[0] == modes[1] ? modes[0] : "mixed";
  EXPECT_EQ(report["mode"], job_mode);

  EXPECT_NE(
      result.out.find("gpumem report: 2 runs on 2 nodes, 4 ranks, 4 GPUs used; mode " + job_mode),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("job maximum: 450.0 MiB process footprint on node-b, GPU 0 (NVIDIA "
                            "B200), rank 2 (local 0)"),
            std::string::npos)
      << result.out;
  const std::string chart = read_file(svg);
  EXPECT_EQ(chart.rfind("<svg", 0), 0u);
  EXPECT_NE(chart.find("rank 2 (local 0) · node-b · GPU 0"), std::string::npos);
  EXPECT_NE(chart.find("job maximum 450.0 MiB on node-b, GPU 0, rank 2"), std::string::npos);

  // --json - prints the same JSON instead of the tables; a file named twice counts once.
  const CommandResult printed = run_command({gpumem_binary(), "report", "--json", "-", a, b, a});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_EQ(nlohmann::json::parse(printed.out), report);
  EXPECT_NE(printed.err.find("skipped " + a + ": named twice"), std::string::npos) << printed.err;
}

// docs/cli.md's srun example, as written there: two nodes of four simulated H100s, one gpumem run
// per node, then the report (the host names are node-0 and node-1 where unshare works).
TEST(Report, TheDocumentedSrunExampleFindsItsMaximum) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const std::filesystem::path cli = gpumem_binary();
  const std::string path = std::string(GPUMEM_TEST_LAUNCHERS) + ":" + cli.parent_path().string() +
                           ":" + std::string(GPUMEM_SIM_DIR) + ":" + std::getenv("PATH");
  const CommandResult srun = run_command(
      {"env", "PATH=" + path, "FAKE_SRUN_SIM_CONFIGS=" + launcher("sim-nodes"), "sh", "-c",
       "cd '" + folder +
           "' && fake-srun --nodes 2 --ntasks-per-node 1 sh -c 'gpumem run --json "
           "\"run-{host}-{rank}.json\" -- fake-torchrun --nnodes 2 --node-rank $SLURM_NODEID "
           "--nproc-per-node 4 train.sh'"});
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    files.push_back(entry.path().string());
  ASSERT_EQ(files.size(), 2u) << srun.err;
  std::vector<std::string> argv = {gpumem_binary(), "report", "--json", "-"};
  argv.insert(argv.end(), files.begin(), files.end());
  const CommandResult result = run_command(argv);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out);
  ASSERT_EQ(report["ranks"].size(), 8u);
  // Rank r holds 2 GiB, a context of 500 MiB and a spike of (r % 5 + 1) GiB: rank 4 the most.
  for (const auto& rank : report["ranks"]) {
    const int r = rank["rank"];
    EXPECT_EQ(rank["peak_bytes"], (2048 + 500 + (r % 5 + 1) * 1024) * MiB) << rank.dump();
    EXPECT_EQ(rank["measured"], "exact");
  }
  EXPECT_EQ(report["maximum"]["peak_bytes"], (2048 + 500 + 5 * 1024) * MiB);
  EXPECT_EQ(report["maximum"]["rank"]["rank"], 4);
  EXPECT_EQ(report["maximum"]["device_key"], "GPU-1000c0de-0000-4000-8000-000000000000");
  EXPECT_EQ(report["mode"], "exact");
}

class BadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    SimGpu gpu;
    folder_ = temporary_folder();
    good_ = folder_ + "/good.json";
    const CommandResult run = run_command({gpumem_binary(), "run", "--json", good_, "--",
                                           sim_tool(), "workload", "alloc a 10MiB; sleep 30ms"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const CommandResult list = run_command({gpumem_binary(), "list", "--json"});
    ASSERT_EQ(list.exit_code, 0);
    write(folder_ + "/list.json", list.out);
    const std::string text = read_file(good_);
    write(folder_ + "/truncated.json", text.substr(0, text.size() / 2));
    write(folder_ + "/empty.json", "");
    nlohmann::json newer = nlohmann::json::parse(text);
    newer["schema"] = "gpumem.run/2";
    write(folder_ + "/newer.json", newer.dump());
    nlohmann::json mistyped = nlohmann::json::parse(text);
    mistyped["devices"][0]["peak_bytes"] = "lots";
    write(folder_ + "/mistyped.json", mistyped.dump());
    write(folder_ + "/array.json", "[1, 2]");
    std::string huge = text;
    huge.replace(huge.find("\"exit_code\": 0"), 14, "\"exit_code\": 1e999");
    write(folder_ + "/huge.json", huge);
    std::filesystem::create_directory(folder_ + "/folder.json");
    // A field gpumem does not keep, over the reader's 1 MiB cap on one string: refused as soon
    // as the cap is passed, not held whole.
    nlohmann::json long_value = nlohmann::json::parse(text);
    long_value["requested_mode"] = std::string(2 << 20, 'x');
    write(folder_ + "/long_value.json", long_value.dump());
    // 8 MiB of whitespace: read as the same run, the whitespace never held.
    std::string spaced = text;
    spaced.insert(spaced.find("\"devices\""), std::string(8 << 20, ' '));
    write(folder_ + "/spaced.json", spaced);
  }
  std::string folder_;
  std::string good_;
};

TEST_F(BadFiles, EachIsNamedWithWhatIsWrongAndNothingIsReported) {
  const struct {
    const char* file;
    const char* message;
  } cases[] = {
      {"missing.json", "No such file or directory"},
      {"truncated.json", "not valid JSON: it ends early"},
      {"empty.json", "empty"},
      {"list.json", "schema gpumem.list/1 is not a run file"},
      {"newer.json",
       "schema gpumem.run/2 is a version this gpumem does not read (it reads "
       "gpumem.run/1)"},
      {"mistyped.json", "devices[0].peak_bytes: expected a number of bytes, found \"lots\""},
      {"array.json", "not a gpumem run file"},
      {"huge.json", "not valid JSON: "},  // a number no type holds
      {"folder.json", "is a folder"},
      {"long_value.json", "requested_mode: a string or number over 1 MiB (at byte "},
  };
  for (const auto& c : cases) {
    const std::string bad = folder_ + "/" + c.file;
    const std::string out = folder_ + "/report.json";
    const CommandResult result =
        run_command({gpumem_binary(), "report", "--json", out, good_, bad});
    EXPECT_EQ(result.exit_code, 1) << c.file << ": " << result.err;
    EXPECT_EQ(result.out, "") << c.file;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("gpumem report: " + bad + ": ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.file << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.file;
  }
}

TEST_F(BadFiles, WhitespaceRunsAreReadWithoutBeingHeld) {
  const CommandResult result = run_command({gpumem_binary(), "report", folder_ + "/spaced.json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("job maximum: 10.0 MiB"), std::string::npos) << result.out;
}

TEST_F(BadFiles, SkipBadReportsTheRestAndNamesWhatItSkipped) {
  const CommandResult result =
      run_command({gpumem_binary(), "report", "--skip-bad", folder_ + "/truncated.json", good_,
                   folder_ + "/list.json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("gpumem report: 1 run on 1 node"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("job maximum: 10.0 MiB"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("skipped " + folder_ + "/truncated.json: "), std::string::npos);
  EXPECT_NE(result.err.find("skipped " + folder_ + "/list.json: "), std::string::npos);

  const CommandResult none = run_command(
      {gpumem_binary(), "report", "--skip-bad", folder_ + "/empty.json", folder_ + "/array.json"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no run file could be read (2 skipped)"), std::string::npos) << none.err;
}

TEST_F(BadFiles, UsageErrorsAreStatus2) {
  const CommandResult nothing = run_command({gpumem_binary(), "report"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_EQ(nothing.err,
            "gpumem report: missing FILE...: run files written by gpumem run --json\n"
            "Usage: gpumem report [OPTIONS] FILE...\n");
  const CommandResult unwritable =
      run_command({gpumem_binary(), "report", "--svg", folder_ + "/no/such/folder.svg", good_});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.err.find("cannot write"), std::string::npos) << unwritable.err;
  EXPECT_EQ(unwritable.out, "");
}

TEST_F(BadFiles, OddFileNamesAndHelpWork) {
  const std::string odd = folder_ + "/run-\xe9.json";  // Latin-1, not UTF-8
  std::filesystem::copy_file(good_, odd);
  const CommandResult result = run_command({gpumem_binary(), "report", "--json", "-", odd});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["inputs"][0]["file"], folder_ + "/run-\xef\xbf\xbd.json");
  const CommandResult help = run_command({gpumem_binary(), "report", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--skip-bad"), std::string::npos);
}

// A rank of a run file: its numbers, the device and UUID of its peak, the peak and how measured.
run::RunDocRank rank_of(int rank, int local_rank, int device, const std::string& uuid,
                        std::int64_t peak, const std::string& measured) {
  run::RunDocRank entry;
  entry.rank = rank;
  entry.local_rank = local_rank;
  entry.device = device;
  entry.uuid = uuid;
  entry.peak_bytes = peak;
  entry.measured = measured;
  return entry;
}

cli::RunFile run_file(const std::string& path, const std::string& host, const std::string& mode,
                      std::vector<run::RunDocDevice> devices,
                      std::vector<run::RunDocRank> ranks = {}) {
  cli::RunFile file;
  file.path = path;
  file.run.host = host;
  file.run.mode = mode;
  file.run.devices = std::move(devices);
  file.run.ranks = std::move(ranks);
  return file;
}

TEST(ReportCombine, RunsSharingAGpuAreSummedAndSaySo) {
  // Two gpumem runs on one node (one per task) that both saw the same GPU.
  const run::RunDocDevice shared{0, 0, "NVIDIA H200", "GPU-1", 100, 30};
  const run::RunDocDevice shared_other_view{1, 0, "NVIDIA H200", "GPU-1", 100, 50};
  const cli::JobReport report = cli::combine_runs(
      {run_file("a", "n", "exact", {shared}, {rank_of(0, 0, 0, "GPU-1", 30, "exact")}),
       run_file("b", "n", "exact", {shared_other_view}, {rank_of(1, 1, 1, "GPU-1", 50, "exact")})});
  ASSERT_EQ(report.devices.size(), 1u);
  EXPECT_EQ(report.devices[0].peak_bytes, 80);  // never below what the two held together
  EXPECT_EQ(report.devices[0].runs_using, 2);
  ASSERT_TRUE(report.maximum);
  ASSERT_TRUE(report.devices[0].top_rank);
  EXPECT_EQ(report.ranks[*report.devices[0].top_rank].rank, 1);
  EXPECT_EQ(report.mode, "exact");
  EXPECT_TRUE(report.warnings.empty());
}

// A run on the shared GPU "GPU-1" (an H200) from `start` to `end` (Unix seconds), its rank
// holding `peak` MiB.
cli::RunFile timed_run(const std::string& path, int rank, std::int64_t peak, double start,
                       double end) {
  cli::RunFile file =
      run_file(path, "n", "exact", {{rank, 0, "NVIDIA H200", "GPU-1", 100, mib(peak)}},
               {rank_of(rank, rank, rank, "GPU-1", mib(peak), "exact")});
  file.run.start_unix_s = start;
  file.run.end_unix_s = end;
  return file;
}

std::string maximum_line(const cli::JobReport& report) {
  const std::string text = cli::report_text(report, {});
  const std::size_t start = text.find("job maximum: ");
  return text.substr(start, text.find('\n', start) - start);
}

TEST(ReportTime, RunsOneAfterTheOtherOnAGpuGiveTheHighestPeak) {
  const cli::JobReport report = cli::combine_runs(
      {timed_run("a", 0, 30, 1000.0, 1010.0), timed_run("b", 1, 50, 1020.0, 1030.0)});
  ASSERT_EQ(report.devices.size(), 1u);
  EXPECT_EQ(report.devices[0].peak_bytes, mib(50));
  EXPECT_EQ(report.devices[0].combined, cli::JobDevice::Combined::highest);
  EXPECT_EQ(report.devices[0].runs_summed, 1);
  EXPECT_EQ(maximum_line(report),
            "job maximum: 50.0 MiB process footprint on n, GPU 0 (NVIDIA H200), rank 1 (local 1) "
            "(the highest of 2 runs that did not overlap)");
  EXPECT_EQ(run::report_document_json(report)["maximum"]["combined"], "highest");
}

TEST(ReportTime, OverlappingRunsOnAGpuAreSummed) {
  const cli::JobReport report = cli::combine_runs(
      {timed_run("a", 0, 30, 1000.0, 1010.0), timed_run("b", 1, 50, 1005.0, 1015.0)});
  EXPECT_EQ(report.devices[0].peak_bytes, mib(80));
  EXPECT_EQ(report.devices[0].combined, cli::JobDevice::Combined::sum);
  EXPECT_EQ(report.devices[0].runs_summed, 2);
  EXPECT_EQ(maximum_line(report),
            "job maximum: 80.0 MiB process footprint on n, GPU 0 (NVIDIA H200), rank 1 (local 1) "
            "(the sum of 2 overlapping runs' peaks: an upper bound, their peaks need not have "
            "coincided)");
  EXPECT_NE(cli::report_text(report, {}).find("80.0 MiB (sum)"), std::string::npos);
}

TEST(ReportTime, ThreeRunsOverlappingInPartsGiveTheSweepsHighestSum) {
  // a and b overlap (80 MiB), b and c overlap (90 MiB); a and c never run together, so the sum
  // of all three (120 MiB) never happened.
  const cli::JobReport report = cli::combine_runs({timed_run("a", 0, 30, 1000.0, 1010.0),
                                                   timed_run("b", 1, 50, 1005.0, 1015.0),
                                                   timed_run("c", 2, 40, 1012.0, 1020.0)});
  EXPECT_EQ(report.devices[0].peak_bytes, mib(90));
  EXPECT_EQ(report.devices[0].runs_using, 3);
  EXPECT_EQ(report.devices[0].runs_summed, 2);
  EXPECT_EQ(maximum_line(report),
            "job maximum: 90.0 MiB process footprint on n, GPU 0 (NVIDIA H200), rank 1 (local 1) "
            "(the sum of the peaks of 2 of 3 runs that overlapped: an upper bound, their peaks "
            "need not have coincided)");
  const auto json = run::report_document_json(report);
  EXPECT_EQ(json["devices"][0]["peak_bytes"], mib(90));
  EXPECT_EQ(json["devices"][0]["combined"], "sum");
  EXPECT_EQ(json["devices"][0]["runs_summed"], 2);
}

TEST(ReportTime, FilesWithoutTimesAreSummedAndSayTheOverlapIsUnknown) {
  cli::RunFile old = timed_run("b", 1, 50, 0, 0);
  old.run.start_unix_s.reset();
  old.run.end_unix_s.reset();
  const cli::JobReport report = cli::combine_runs({timed_run("a", 0, 30, 1000.0, 1010.0), old});
  EXPECT_EQ(report.devices[0].peak_bytes, mib(80));
  EXPECT_EQ(report.devices[0].combined, cli::JobDevice::Combined::overlap_unknown);
  EXPECT_EQ(maximum_line(report),
            "job maximum: 80.0 MiB process footprint on n, GPU 0 (NVIDIA H200), rank 1 (local 1) "
            "(the sum of 2 runs' peaks on it: whether they overlapped is unknown, a run file has "
            "no times)");
}

TEST(ReportTime, RunFilesCarryTheirTimesAndOldOnesReadWithout) {
  const std::string document =
      R"({"schema": "gpumem.run/1", "command": ["x"], "exit_code": 0, "elapsed_s": 1.5,
          "interval_s": 0.01, "mode": "exact", "devices": [])";
  std::string error;
  const auto old = run::parse_run_document(document + "}", "old.json", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_FALSE(old->start_unix_s);
  const auto timed = run::parse_run_document(
      document + R"(, "start_unix_s": 1764650000.25, "end_unix_s": 1764650001.75})", "new.json",
      &error);
  ASSERT_TRUE(timed) << error;
  EXPECT_EQ(*timed->start_unix_s, 1764650000.25);
  EXPECT_EQ(*timed->end_unix_s, 1764650001.75);
  EXPECT_FALSE(run::parse_run_document(document + R"(, "start_unix_s": 5})", "half.json", &error));
  EXPECT_EQ(error, "half.json: end_unix_s: missing");
  EXPECT_FALSE(run::parse_run_document(document + R"(, "start_unix_s": 5, "end_unix_s": 4})",
                                       "back.json", &error));
  EXPECT_EQ(error, "back.json: end_unix_s: before start_unix_s");
}

TEST(ReportTime, TwoRunsOneAfterTheOtherOnTheSimulatedGpu) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  for (const char* step : {"30", "50"}) {
    const CommandResult run =
        run_command({gpumem_binary(), "run", "--host", "node-1", "--json",
                     folder + "/run-" + step + ".json", "--", sim_tool(), "workload",
                     std::string("alloc a ") + step + "MiB; sleep 100ms; free a"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  const auto first = nlohmann::json::parse(read_file(folder + "/run-30.json"));
  const auto second = nlohmann::json::parse(read_file(folder + "/run-50.json"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(first["start_unix_s"].get<double>(), now - 60);
  EXPECT_GE(first["end_unix_s"].get<double>() - first["start_unix_s"].get<double>(), 0.1);
  EXPECT_LT(first["end_unix_s"].get<double>(), second["start_unix_s"].get<double>());
  const CommandResult report =
      run_command({gpumem_binary(), "report", folder + "/run-30.json", folder + "/run-50.json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("\njob maximum: 50.0 MiB process footprint on node-1, GPU 0 (NVIDIA "
                            "H200) (the highest of 2 runs that did not overlap)\n"),
            std::string::npos)
      << report.out;
}

TEST(ReportCombine, DevicesWithoutUuidsAreKeptApartByNodeAndModesCombine) {
  const run::RunDocDevice no_uuid{0, 3, "GPU", "", 100, 10};
  const cli::JobReport report = cli::combine_runs(
      {run_file("a", "n1", "exact", {no_uuid}, {rank_of(0, 0, 0, "", 10, "exact")}),
       run_file("b", "n2", "sampled", {no_uuid}, {rank_of(0, 0, 0, "", 10, "sampled")}),
       run_file("c", "", "exact", {})});
  ASSERT_EQ(report.devices.size(), 2u);
  EXPECT_EQ(report.devices[0].key, "n1:3");
  EXPECT_EQ(report.devices[1].key, "n2:3");
  EXPECT_EQ(report.mode, "mixed");
  ASSERT_EQ(report.nodes.size(), 3u);
  EXPECT_EQ(report.nodes[2].name, "(c)");  // a file from before hosts were recorded
  // Rank 0 in two files: files of two jobs, most likely.
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("rank 0 is in a and in b"), std::string::npos);
  EXPECT_EQ(cli::combine_runs({run_file("s", "n", "sampled", {})}).mode, "sampled");
  run::RunDocDevice unused = no_uuid;
  unused.peak_bytes = 0;
  EXPECT_FALSE(cli::combine_runs({run_file("s", "n", "sampled", {unused})}).maximum);
}

TEST(ReportSvg, VeryManyRanksGetABarPerNode) {
  std::vector<cli::RunFile> runs;
  for (int node = 0; node < 40; ++node) {
    std::vector<run::RunDocDevice> devices;
    std::vector<run::RunDocRank> ranks;
    for (int gpu = 0; gpu < 4; ++gpu) {
      const std::string uuid = "GPU-" + std::to_string(node * 4 + gpu);
      const std::int64_t peak = node == 17 && gpu == 2 ? 900 : 100 + gpu;
      devices.push_back({gpu, gpu, "GPU", uuid, 1000, peak});
      ranks.push_back(rank_of(node * 4 + gpu, gpu, gpu, uuid, peak, "exact"));
    }
    runs.push_back(
        run_file("f" + std::to_string(node), "n" + std::to_string(node), "exact", devices, ranks));
  }
  const cli::JobReport report = cli::combine_runs(runs);
  const std::string svg = cli::report_svg(report);
  EXPECT_NE(svg.find("peak per node (process footprint), mode exact, 160 ranks: a bar per node"),
            std::string::npos);
  EXPECT_NE(svg.find(">n17 · GPU 2, rank 70</text>"), std::string::npos);
  std::size_t bars = 0;
  for (std::size_t at = svg.find("<rect x="); at != std::string::npos;
       at = svg.find("<rect x=", at + 1))
    ++bars;
  EXPECT_EQ(bars, 40u);
  // And the job's maximum is the red one.
  EXPECT_NE(svg.find("job maximum 900 B on n17, GPU 2, rank 70"), std::string::npos);

  runs.resize(2);  // 8 ranks: a bar each
  const std::string few = cli::report_svg(cli::combine_runs(runs));
  EXPECT_NE(few.find("GPU memory peak per rank (process footprint)"), std::string::npos);
  EXPECT_NE(few.find("rank 7 (local 3) · n1 · GPU 3"), std::string::npos);
}

}  // namespace
}  // namespace gpumem::testing
