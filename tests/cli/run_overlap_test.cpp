// `gpumem run` when calls that allocate and free are inside the driver at once (issue 29): threads
// of one process, or processes of the command, racing. The driver charges an allocation and
// releases a free somewhere between the call's ENTER and EXIT, and does not say where: the run's
// figure is the device's peak to the byte where no such calls overlapped at it, and otherwise a
// range that holds it, said to be one (docs/peaks.md, "Calls in flight together"). The oracle is
// the simulated device's own high-water mark (`gpumem-sim show`'s used_peak_bytes).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_runner.hpp"
#include "support/sim_configs.hpp"
#include "support/sim_gpu.hpp"

// A namespace of its own: the unity build puts this file beside run_edges_test.cpp.
namespace gpumem::testing::overlap {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

struct Overlap {
  CommandResult result;
  nlohmann::json summary;  // device 0 of the run's JSON
  nlohmann::json device;   // `gpumem-sim show`'s device 0 after the run
};

Overlap run_overlap(const std::string& shell_line, std::vector<std::string> options = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv{gpumem_binary(), "run", "--json", json};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", "sh", "-c", shell_line});
  Overlap overlap{run_command(argv), {}, {}};
  const std::string text = read_file(json);
  if (!text.empty()) overlap.summary = nlohmann::json::parse(text);
  overlap.device = nlohmann::json::parse(sim_show())["devices"][0];
  return overlap;
}

std::string workload(const std::string& script) {
  return "'" + sim_tool() + "' workload '" + script + "'";
}

// `count` copies of `one` at once.
std::string at_once(int count, const std::string& one) {
  return "i=0; while [ $i -lt " + std::to_string(count) + " ]; do " + one +
         " & i=$((i+1)); done; wait";
}

const nlohmann::json kNull;

// The run's figure against the device's high-water mark: equal to it where the run gives one
// figure, else a range that holds it (and says so on the summary's lines).
void expect_the_devices_peak(const Overlap& run, const std::string& what) {
  ASSERT_EQ(run.result.exit_code, 0) << what << ": " << run.result.err;
  ASSERT_EQ(run.summary["mode"], "exact") << what << ": " << run.summary.dump(2);
  const nlohmann::json& device = run.summary["devices"][0];
  const std::int64_t held = run.device["used_peak_bytes"];
  const std::int64_t peak = device["peak_bytes"];
  const nlohmann::json& at_most = device.contains("peak_at_most_bytes")
                                      ? device["peak_at_most_bytes"]
                                      : kNull;  // an older run document has none
  if (at_most.is_null()) {
    EXPECT_EQ(peak, held) << what << ": one figure, not the device's peak\n" << device.dump(2);
    EXPECT_NE(run.result.err.find("measured exactly"), std::string::npos) << run.result.err;
    return;
  }
  EXPECT_LE(peak, held) << what << ": the range's low end is above the device's peak\n"
                        << device.dump(2);
  EXPECT_GE(at_most.get<std::int64_t>(), held)
      << what << ": the range's high end is below the device's peak\n"
      << device.dump(2);
  EXPECT_LT(peak, at_most.get<std::int64_t>()) << device.dump(2);
  EXPECT_NE(run.result.err.find("to a range where calls that allocated and freed"),
            std::string::npos)
      << run.result.err;
}

// Four threads allocating and freeing 1 MiB back to back over a 100 MiB block: their calls
// overlap all the time, allocations with frees. The events counted at their calls' EXIT alone
// came out a few MiB off the device's peak while the run said "measured exactly".
TEST(RunOverlap, ThreadsAllocatingAndFreeingAtOnceGiveTheDevicesPeakOrARangeHoldingIt) {
  for (int run = 0; run < 3; ++run) {
    SimGpu gpu(kContext500);
    const Overlap overlap = run_overlap(workload("alloc a 100MiB; churn 4 1MiB 1s; free a"));
    expect_the_devices_peak(overlap, "run " + std::to_string(run));
    // The range is no wider than the calls that can be in flight at once: 4 threads' 1 MiB.
    const nlohmann::json& device = overlap.summary["devices"][0];
    if (!device["exact_peak_at_most_bytes"].is_null()) {
      EXPECT_LE(device["exact_peak_at_most_bytes"].get<std::int64_t>() -
                    device["exact_peak_bytes"].get<std::int64_t>(),
                8 * kMiB)
          << device.dump(2);
    }
  }
}

// The same race across processes: 8 of them, one thread each, on 500 MiB contexts.
TEST(RunOverlap, ProcessesAllocatingAndFreeingAtOnceGiveTheDevicesPeakOrARangeHoldingIt) {
  for (int run = 0; run < 2; ++run) {
    SimGpu gpu(kContext500);
    const Overlap overlap = run_overlap(at_once(8, workload("churn 1 1MiB 1s")));
    expect_the_devices_peak(overlap, "run " + std::to_string(run));
  }
}

// Polls the simulated device until it holds `bytes` (the simulator says so, not a clock).
void until_the_device_holds(std::int64_t bytes) {
  for (;;) {
    const nlohmann::json device = nlohmann::json::parse(sim_show())["devices"][0];
    if (device["used_bytes"] == bytes) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the device, no sync
  }
}

// Two processes on 500 MiB contexts: one frees a 100 MiB block in a call that returns 1 s after
// the driver released it (GPUMEM_SIM_FAULTS' memory_return_delay), the other allocates 100 MiB
// within that second. The device never held both blocks (1101 MiB), yet counted at their calls'
// EXITs the allocation came before the free: the run said 1201 MiB "exactly".
TEST(RunOverlap, AFreeThatReturnsLateWhileAnotherProcessAllocatesIsNotCountedAsHeld) {
  SimGpu gpu(kContext500);
  const std::string folder = temporary_folder();
  const std::string json = folder + "/summary.json";
  const std::string go = folder + "/go";
  const std::string freer =
      "env GPUMEM_SIM_FAULTS=memory_return_delay=1000000 " +
      workload("alloc x 100MiB; wait_for " + go + "1; free x; wait_for " + go + "3");
  const std::string allocator =
      workload("alloc z 1MiB; wait_for " + go + "2; alloc y 100MiB; wait_for " + go + "3");
  // A budget between what the device held and what the events could not rule out.
  BackgroundCommand run({gpumem_binary(), "run", "--json", json, "--max-peak", "1150MiB", "--",
                         "sh", "-c", freer + " & " + allocator});
  // Each state polled for stays until the test moves on: no window can be missed under load.
  until_the_device_holds(1101 * kMiB);  // both contexts, x and z
  std::ofstream(go + "1").put('\n');
  until_the_device_holds(1001 * kMiB);  // x released; its free returns in 1 s
  std::ofstream(go + "2").put('\n');
  until_the_device_holds(1101 * kMiB);  // y taken
  std::ofstream(go + "3").put('\n');
  Overlap overlap{run.wait(std::chrono::seconds(60)), {}, {}};
  overlap.summary = nlohmann::json::parse(read_file(json));
  overlap.device = nlohmann::json::parse(sim_show())["devices"][0];
  ASSERT_EQ(overlap.device["used_peak_bytes"], 1101 * kMiB);
  expect_the_devices_peak(overlap, "a late free");
  // The budget is judged on what the device surely held, and the verdict says what it may have
  // been where the run gives a range (the allocation entered while the free was in flight).
  const nlohmann::json& verdict = overlap.summary["budgets"][0];
  EXPECT_EQ(verdict["exceeded"], false) << verdict.dump(2);
  const nlohmann::json& at_most = overlap.summary["devices"][0]["peak_at_most_bytes"];
  EXPECT_EQ(verdict["peak_at_most_bytes"], at_most) << verdict.dump(2);
  EXPECT_EQ(verdict["may_be_higher"], !at_most.is_null()) << verdict.dump(2);
  if (!at_most.is_null() && at_most.get<std::int64_t>() > 1150 * kMiB) {
    EXPECT_NE(overlap.result.err.find("within the --max-peak budget of 1.1 GiB (exact to a range: "
                                      "the peak may have been up to "),
              std::string::npos)
        << overlap.result.err;
    EXPECT_NE(overlap.result.err.find(", over the budget)"), std::string::npos)
        << overlap.result.err;
  }
}

// The other way round: an allocation returns 1 s after the driver charged it, and another process
// frees its 100 MiB block within that second. The device held both (1201 MiB); counted at their
// calls' EXITs, the free came before the allocation and the run said 1101 MiB "exactly".
TEST(RunOverlap, AnAllocationThatReturnsLateWhileAnotherProcessFreesIsCountedAsHeld) {
  SimGpu gpu(kContext500);
  const std::string folder = temporary_folder();
  const std::string json = folder + "/summary.json";
  const std::string go = folder + "/go";
  const std::string allocator = "env GPUMEM_SIM_FAULTS=memory_return_delay=1000000 " +
                                workload("alloc z 1MiB; wait_for " + go +
                                         "1; alloc y 100MiB; wait_for " + go + "3; free y; free z");
  const std::string freer =
      workload("alloc x 100MiB; wait_for " + go + "2; free x; wait_for " + go + "3");
  BackgroundCommand run(
      {gpumem_binary(), "run", "--json", json, "--", "sh", "-c", allocator + " & " + freer});
  until_the_device_holds(1101 * kMiB);  // both contexts, x and z
  std::ofstream(go + "1").put('\n');
  until_the_device_holds(1201 * kMiB);  // y charged; its allocation returns in 1 s
  std::ofstream(go + "2").put('\n');
  until_the_device_holds(1101 * kMiB);  // x released
  std::ofstream(go + "3").put('\n');
  Overlap overlap{run.wait(std::chrono::seconds(60)), {}, {}};
  overlap.summary = nlohmann::json::parse(read_file(json));
  overlap.device = nlohmann::json::parse(sim_show())["devices"][0];
  ASSERT_EQ(overlap.device["used_peak_bytes"], 1201 * kMiB);
  expect_the_devices_peak(overlap, "a late allocation");
}

// A process that loaded CUDA before another's peak but created its context only after it (it
// waits for the first to end): its context was not on the device at that peak, and the run's peak
// is the first process's alone.
TEST(RunOverlap, AContextCreatedAfterThePeakIsNotCountedAtIt) {
  SimGpu gpu(kContext500);
  const std::string go = temporary_folder() + "/go";
  // The second process says "up" once it has loaded CUDA (cuInit: its slot is claimed), then
  // waits; the first runs its 650 MiB to the end, then lets the second make its context.
  const std::string later = workload("print up; wait_for " + go + "; alloc b 10MiB; free b");
  const std::string first = workload("alloc a 100MiB; spike 50MiB 1ms; free a");
  const Overlap overlap =
      run_overlap(later + " | { read up; " + first + "; touch '" + go + "'; cat >/dev/null; }");
  ASSERT_EQ(overlap.device["used_peak_bytes"], 650 * kMiB);
  expect_the_devices_peak(overlap, "a context made after the peak");
  EXPECT_EQ(overlap.summary["devices"][0]["exact_peak_bytes"], 150 * kMiB);
}

}  // namespace
}  // namespace gpumem::testing::overlap
