// `gpumem run` at the edges (issue 29): a process too short for any sample, one whose driver
// calls never pause, many processes at once. Each keeps its context in the footprint, every
// run, and `--max-peak` fails each run that broke its budget. The oracle is the simulated
// device's own high-water mark (`gpumem-sim show`'s used_peak_bytes), never gpumem's figures.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_runner.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "support/sim_configs.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

struct Edge {
  CommandResult result;
  nlohmann::json summary;
  nlohmann::json device;  // `gpumem-sim show`'s device 0 after the run
};

nlohmann::json sim_device() {
  return nlohmann::json::parse(sim_show())["devices"][0];
}

// `gpumem run` at its default interval (10 ms: a 1 ms process falls between samples).
// `before` comes first (`env TMPDIR=…`).
Edge run_edge(const std::vector<std::string>& command, std::vector<std::string> options = {},
              const std::vector<std::string>& before = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = before;
  argv.insert(argv.end(), {gpumem_binary(), "run", "--json", json});
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  Edge edge{run_command(argv), {}, {}};
  const std::string text = read_file(json);
  if (!text.empty()) edge.summary = nlohmann::json::parse(text);
  edge.device = sim_device();
  return edge;
}

std::vector<std::string> workload(const std::string& script) {
  return {sim_tool(), "workload", script};
}

// The issue's own case: the device held 650 MiB (a 500 MiB context, 100 MiB, a 50 MiB spike
// of 1 ms), and a run reported 150 MiB "exactly", 6 runs of 6.
TEST(RunEdges, AOneMillisecondProcessKeepsItsContextEveryRun) {
  for (int run = 0; run < 5; ++run) {
    SimGpu gpu(kContext500);
    const Edge edge = run_edge(workload("alloc a 100MiB; spike 50MiB 1ms; free a"));
    ASSERT_EQ(edge.result.exit_code, 0) << edge.result.err;
    EXPECT_EQ(edge.device["used_peak_bytes"], 650 * kMiB);
    EXPECT_EQ(edge.summary["mode"], "exact") << edge.summary.dump(2);
    const auto& device = edge.summary["devices"][0];
    EXPECT_EQ(device["exact_peak_bytes"], 150 * kMiB);
    EXPECT_EQ(device["peak_bytes"], 650 * kMiB) << "run " << run << ": " << device.dump(2);
  }
}

TEST(RunEdges, TheMaxPeakOfAOneMillisecondProcessFailsEveryRunThatBrokeIt) {
  for (int run = 0; run < 3; ++run) {
    SimGpu gpu(kContext500);
    const Edge over =
        run_edge(workload("alloc a 100MiB; spike 50MiB 1ms; free a"), {"--max-peak", "649MiB"});
    EXPECT_EQ(over.device["used_peak_bytes"], 650 * kMiB);
    EXPECT_EQ(over.result.exit_code, 3) << over.result.err;
    EXPECT_NE(over.result.err.find("over the --max-peak budget of 649.0 MiB by 1.0 MiB"),
              std::string::npos)
        << over.result.err;
  }
  SimGpu gpu(kContext500);
  const Edge within =
      run_edge(workload("alloc a 100MiB; spike 50MiB 1ms; free a"), {"--max-peak", "650MiB"});
  EXPECT_EQ(within.result.exit_code, 0) << within.result.err;
}

// Four threads allocating and freeing back to back for 2 s over a 100 MiB block: no moment
// without a call in flight, so no sample's reading is ever quiet. The context is read at the
// moment the process made quiet for it (right after its creation), not hoped for.
TEST(RunEdges, AProcessWhoseCallsNeverPauseKeepsItsContext) {
  SimGpu gpu(kContext500);
  const Edge edge =
      run_edge(workload("alloc a 100MiB; churn 4 1MiB 2s; free a"), {"--max-peak", "600MiB"});
  EXPECT_EQ(edge.result.exit_code, 3) << edge.result.err;  // over: the context counts
  EXPECT_EQ(edge.summary["mode"], "exact") << edge.summary.dump(2);
  const auto& device = edge.summary["devices"][0];
  // The events' peak: the block and one to four 1 MiB blocks, as the threads' calls overlapped.
  const std::int64_t events = device["exact_peak_bytes"];
  EXPECT_GE(events, 101 * kMiB);
  EXPECT_LE(events, 104 * kMiB);
  // At least the events' peak on the context (a sample may have seen more: the events' figure is
  // the low end of a range where allocations and frees overlapped, below).
  EXPECT_GE(device["peak_bytes"].get<std::int64_t>(), events + 500 * kMiB) << device.dump(2);
  EXPECT_EQ(device["context_bytes"], 500 * kMiB);
  const std::int64_t held = edge.device["used_peak_bytes"];
  EXPECT_GE(held, 601 * kMiB);
  EXPECT_LE(held, 604 * kMiB);
  // Allocations and frees in flight together: the device's peak is in the run's range
  // (run_overlap_test.cpp), or is the run's figure where none overlapped at the peak.
  if (device["peak_at_most_bytes"].is_null()) {
    EXPECT_EQ(device["peak_bytes"], held) << device.dump(2);
  } else {
    EXPECT_LE(device["peak_bytes"].get<std::int64_t>(), held) << device.dump(2);
    EXPECT_GE(device["peak_at_most_bytes"].get<std::int64_t>(), held) << device.dump(2);
  }
}

// The same with more threads than a process slot has call lines (run_counters.hpp, kCallLines):
// the first 16 mark their calls on lines of their own, the others on the slot's shared word, and
// the monitor's readings see both. With 20 threads the events' peak (counted at each call's EXIT)
// and the device's own can differ by a few blocks either way (docs/peaks.md), so the figures are
// bounded by the blocks there can be; the context is known to the byte.
TEST(RunEdges, AProcessWithMoreThreadsThanCallLinesKeepsItsContext) {
  SimGpu gpu(kContext500);
  const Edge edge =
      run_edge(workload("alloc a 100MiB; churn 20 1MiB 1s; free a"), {"--max-peak", "600MiB"});
  EXPECT_EQ(edge.result.exit_code, 3) << edge.result.err;  // over: the context counts
  EXPECT_EQ(edge.summary["mode"], "exact") << edge.summary.dump(2);
  const auto& device = edge.summary["devices"][0];
  EXPECT_EQ(device["context_bytes"], 500 * kMiB) << device.dump(2);
  const std::int64_t events = device["exact_peak_bytes"];
  EXPECT_GE(events, 101 * kMiB);
  EXPECT_LE(events, 120 * kMiB);
  const std::int64_t peak = device["peak_bytes"];
  EXPECT_GE(peak, events + 500 * kMiB) << device.dump(2);
  EXPECT_LE(peak, 620 * kMiB) << device.dump(2);
  const std::int64_t held = edge.device["used_peak_bytes"];
  EXPECT_GE(held, 601 * kMiB);
  EXPECT_LE(held, 620 * kMiB);
}

// N processes that all hold 10 MiB on their 500 MiB contexts at once, released together: the
// device held exactly N × 510 MiB, and so must the run say, at every N.
class RunEdgesConcurrent : public ::testing::TestWithParam<int> {};

TEST_P(RunEdgesConcurrent, ManyShortProcessesKeepEveryContext) {
  const int processes = GetParam();
  SimGpu gpu(kContext500);
  const std::string folder = temporary_folder();
  const std::string go = folder + "/go";
  const std::string json = folder + "/summary.json";
  const std::string one =
      "'" + sim_tool() + "' workload 'alloc a 10MiB; wait_for " + go + "; free a'";
  const std::string line = "i=0; while [ $i -lt " + std::to_string(processes) + " ]; do " + one +
                           " & i=$((i+1)); done; wait";
  // A budget 1 byte below what the device held.
  BackgroundCommand run({gpumem_binary(), "run", "--json", json, "--max-peak",
                         std::to_string(processes * 510 * kMiB - 1) + "B", "--", "sh", "-c", line});
  // Released once every process holds its block (the simulator says so, not a clock). Each
  // process waits a minute for the release: a wait that outlasts it says what the device held.
  for (;;) {
    const nlohmann::json device = sim_device();
    if (device["used_bytes"] == static_cast<std::int64_t>(processes) * 510 * kMiB) break;
    ASSERT_LT(device["used_bytes"].get<std::int64_t>(), processes * 510 * kMiB);
    ASSERT_TRUE(run.running()) << "the run ended before every process held its block: "
                               << device.dump(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the device, no sync
  }
  std::ofstream(go).put('\n');
  const CommandResult result = run.wait(std::chrono::seconds(120));
  const nlohmann::json device = sim_device();
  const nlohmann::json summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(device["used_peak_bytes"], processes * 510 * kMiB);
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  const auto& measured = summary["devices"][0];
  EXPECT_EQ(measured["peak_bytes"], processes * 510 * kMiB) << measured.dump(2);
  EXPECT_EQ(measured["exact_peak_bytes"], processes * 10 * kMiB);
  // Allocations overlapped only allocations, frees only frees: one figure, not a range.
  EXPECT_TRUE(measured["peak_at_most_bytes"].is_null()) << measured.dump(2);
  EXPECT_EQ(result.exit_code, 3) << result.err;  // over the budget, by 1 byte
}

INSTANTIATE_TEST_SUITE_P(Processes, RunEdgesConcurrent, ::testing::Values(1, 8, 32, 128));

std::string quoted(const std::string& word) {
  return "'" + word + "'";
}

// The 650 MiB process, ending with status 7: the job's own status must come through.
const std::string kJob = "alloc a 100MiB; spike 50MiB 1ms; free a; exit 7";

TEST(RunEdges, ATmpdirThatCannotBeWrittenTouchesNeitherTheJobNorTheMeasurement) {
  for (const std::string tmpdir : {"/nonexistent-gpumem-tmpdir", "/proc"}) {
    SimGpu gpu(kContext500);
    const Edge edge = run_edge(workload(kJob), {}, {"env", "TMPDIR=" + tmpdir});
    EXPECT_EQ(edge.result.exit_code, 7) << tmpdir << ": " << edge.result.err;
    EXPECT_EQ(edge.summary["mode"], "exact") << edge.summary.dump(2);
    EXPECT_EQ(edge.summary["devices"][0]["peak_bytes"], 650 * kMiB);
  }
}

// A full TMPDIR (a 64 KiB tmpfs, filled) in a mount namespace of the test's own: it killed the
// job with SIGBUS (status 135).
TEST(RunEdges, AFullTmpdirTouchesNeitherTheJobNorTheMeasurement) {
  SimGpu gpu(kContext500);
  const std::string folder = temporary_folder();
  const std::string full = folder + "/full";
  std::filesystem::create_directory(full);
  const std::string json = folder + "/summary.json";
  const std::string inside = "mount -t tmpfs -o size=64k tmpfs " + quoted(full) +
                             " || exit 99; dd if=/dev/zero of=" + quoted(full + "/fill") +
                             " bs=4k 2>/dev/null; TMPDIR=" + quoted(full) + " exec " +
                             quoted(gpumem_binary()) + " run --json " + quoted(json) + " -- " +
                             quoted(sim_tool()) + " workload " + quoted(kJob);
  const CommandResult result = run_command({"unshare", "--mount", "sh", "-c", inside});
  if (result.exit_code == 99) GTEST_SKIP() << "no tmpfs may be mounted here: " << result.err;
  EXPECT_EQ(result.exit_code, 7) << result.err;
  const nlohmann::json summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 650 * kMiB);
}

// A process of the command that tries to truncate the counters: refused (they are sealed), and
// neither the job nor the run notices.
TEST(RunEdges, TheCountersCannotBeTruncatedByTheCommand) {
  SimGpu gpu(kContext500);
  const Edge edge =
      run_edge({"sh", "-c",
                "truncate -s 0 \"$GPUMEM_RUN_COUNTERS\" 2>/dev/null && exit 50; exec " +
                    quoted(sim_tool()) + " workload " + quoted(kJob)});
  EXPECT_EQ(edge.result.exit_code, 7) << edge.result.err;
  EXPECT_EQ(edge.summary["mode"], "exact") << edge.summary.dump(2);
  EXPECT_EQ(edge.summary["devices"][0]["peak_bytes"], 650 * kMiB);
}

// Writes `bytes` (hex) at `offset` of the counters, from inside the command.
std::string overwrite(std::size_t offset, const std::string& hex) {
  return "python3 -c 'import os; f = open(os.environ[\"GPUMEM_RUN_COUNTERS\"], \"r+b\"); f.seek(" +
         std::to_string(offset) + "); f.write(bytes.fromhex(\"" + hex + "\"))'";
}

// A job that forges the device's peak mid-run (8 EiB, as it was reported "exactly"): the value
// is named and ignored, the run is not exact, and the budget's verdict says the peak may have
// been higher. The job's status comes through.
TEST(RunEdges, AForgedLevelIsNamedAndIgnored) {
  SimGpu gpu(kContext500);
  const std::string go = temporary_folder() + "/go";
  const std::size_t peak =
      offsetof(run::RunCounters, devices) + offsetof(run::DeviceCounters, peak);
  const std::string line = quoted(sim_tool()) + " workload " +
                           quoted("alloc a 100MiB; wait_for " + go + "; free a; exit 7") + " & " +
                           overwrite(peak, "ffffffffffffff7f") + "; touch " + quoted(go) +
                           "; wait $!";
  const Edge edge = run_edge({"sh", "-c", line}, {"--max-peak", "10GiB"});
  EXPECT_EQ(edge.result.exit_code, 7) << edge.result.err;
  EXPECT_EQ(edge.summary["mode"], "mixed") << edge.summary.dump(2);
  EXPECT_NE(edge.summary["fallback_reason"].get<std::string>().find("forged or torn, ignored"),
            std::string::npos)
      << edge.summary.dump(2);
  EXPECT_LE(edge.summary["devices"][0]["peak_bytes"].get<std::int64_t>(), 600 * kMiB);
  EXPECT_NE(edge.result.err.find("the peak may have been higher"), std::string::npos)
      << edge.result.err;
}

// The counters' first page zeroed mid-run (their header, the run's totals, the first devices):
// gpumem says so and the job's status comes through.
TEST(RunEdges, ZeroedCountersAreNamedAndTheJobCarriesOn) {
  SimGpu gpu(kContext500);
  const std::string go = temporary_folder() + "/go";
  const std::string line = quoted(sim_tool()) + " workload " +
                           quoted("alloc a 100MiB; wait_for " + go + "; free a; exit 7") + " & " +
                           overwrite(0, std::string(8192, '0')) + "; touch " + quoted(go) +
                           "; wait $!";
  const Edge edge = run_edge({"sh", "-c", line});
  EXPECT_EQ(edge.result.exit_code, 7) << edge.result.err;
  EXPECT_NE(edge.summary["mode"], "exact") << edge.summary.dump(2);
  EXPECT_NE(edge.summary["fallback_reason"].get<std::string>().find("overwritten"),
            std::string::npos)
      << edge.summary.dump(2);
}

}  // namespace
}  // namespace gpumem::testing
