// The engine of `gpumem run` through its seam, as any caller would use it: it measures a command
// the caller launched and returns one RunResult, whose headline figure is the simulated driver's.
#include "gpumem/internal/run_engine.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpumem/device.hpp"
#include "support/sim_gpu.hpp"

extern char** environ;

namespace gpumem::run {
namespace {

using testing::MiB;

constexpr const char* kOneH200 =
    R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 100}]})";

// Starts the simulator's workload tool with `environment`; its pid, or -1.
int spawn_workload(const std::string& script, const std::vector<std::string>& environment) {
  const std::string tool = testing::sim_path("gpumem-sim");
  std::vector<char*> argv = {const_cast<char*>(tool.c_str()), const_cast<char*>("workload"),
                             const_cast<char*>(script.c_str()), nullptr};
  std::vector<char*> envp;
  for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, tool.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  return pid;
}

// One simulated GPU for the suite: this process's NVML keeps the state it first loaded.
class RunEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gpu_ = new testing::SimGpu(kOneH200); }
  static void TearDownTestSuite() {
    delete gpu_;
    gpu_ = nullptr;
  }
  static testing::SimGpu* gpu_;
};
testing::SimGpu* RunEngine::gpu_ = nullptr;

RunResult measure(Engine& engine, const std::string& script) {
  const std::vector<std::string> environment = engine.child_environment(environ);
  engine.baseline();
  const int pid = spawn_workload(script, environment);
  EXPECT_GT(pid, 0);
  engine.start(pid, 0.005);
  int status = 0;
  ::waitpid(pid, &status, 0);
  engine.stop();
  RunResult result;
  result.exit.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  engine.finish(result);
  return result;
}

// A spike of 2 ms between two samples, on a context of 100 MiB: the events count it, the
// monitor's quiet readings give the context, and the headline figure is their sum, what the
// device held at the spike.
TEST_F(RunEngine, ExactlyTheFootprintTheDeviceHeldAtTheSpike) {
  Engine engine(devices(), /*keep_timeline=*/true);
  std::string why;
  ASSERT_TRUE(
      engine.count_exactly(std::string(GPUMEM_BUILD_DIR) + "/lib/libgpumem_inject.so", &why))
      << why;
  ASSERT_TRUE(engine.exact());
  const RunResult result =
      measure(engine, "alloc a 100MiB; sleep 200ms; spike 200MiB 2ms; sleep 200ms");
  ASSERT_EQ(result.exit.exit_code, 0);
  EXPECT_EQ(result.measured, Measured::exact) << result.fallback_reason;
  EXPECT_EQ(result.exact_processes, 1);
  ASSERT_EQ(result.devices.size(), 1u);
  const DeviceTrack& device = result.devices[0];
  EXPECT_EQ(device.exact_peak, 300 * MiB);
  EXPECT_EQ(device.context_bytes, 100 * MiB);
  EXPECT_EQ(command_peak(result, device), 400 * MiB);
  EXPECT_FALSE(result.timeline.empty());
  ASSERT_EQ(result.processes.size(), 1u);
  EXPECT_TRUE(result.processes[0].exact);
}

// Without exact counting the engine samples, and the figure is what the samples saw: the
// allocation held for long, never the 2 ms spike.
TEST_F(RunEngine, SampledWithoutTheInjectionLibrary) {
  Engine engine(devices(), /*keep_timeline=*/false);
  EXPECT_FALSE(engine.exact());
  const RunResult result = measure(engine, "alloc a 100MiB; sleep 300ms");
  EXPECT_EQ(result.measured, Measured::sampled);
  ASSERT_EQ(result.devices.size(), 1u);
  EXPECT_EQ(command_peak(result, result.devices[0]), 200 * MiB)  // context + allocation
      << "device " << result.devices[0].device_start << " -> " << result.devices[0].device_peak
      << ", " << result.processes.size() << " processes, " << result.samples << " samples";
  EXPECT_TRUE(result.timeline.empty());
}

// The one function that decides the headline figure, in each mode.
TEST(RunResult, TheHeadlineFigureInEachMode) {
  RunResult result;
  DeviceTrack device;
  device.tree_peak = 300;       // what the samples saw
  device.exact_peak = 250;      // the events alone
  device.footprint_peak = 350;  // events plus contexts
  device.mixed_peak = 420;
  device.device_start = 1000;
  device.device_peak = 1500;
  result.measured = Measured::exact;
  EXPECT_EQ(command_peak(result, device), 350);
  result.measured = Measured::mixed;
  EXPECT_EQ(command_peak(result, device), 420);
  result.measured = Measured::sampled;
  EXPECT_EQ(command_peak(result, device), 300);
  device.bounded_by_device = true;  // unmatched pids: the device's rise bounds it
  EXPECT_EQ(command_peak(result, device), 500);
  EXPECT_EQ(device_rise(device), 500);
}

// The one function that decides which devices the command used (the summary's rows, the plot's
// panels): any figure measured for the command above zero, whatever others held there.
TEST(RunResult, ADeviceIsUsedWhenAnyOfTheCommandsFiguresIsAboveZero) {
  RunResult result;
  result.measured = Measured::sampled;
  DeviceTrack others_only;
  others_only.device_start = 1000;
  others_only.device_peak = 1000 + 4096;  // other processes' memory rose; the command's did not
  EXPECT_FALSE(device_used(result, others_only));
  for (std::int64_t DeviceTrack::*figure :
       {&DeviceTrack::tree_peak, &DeviceTrack::exact_peak, &DeviceTrack::footprint_peak,
        &DeviceTrack::mixed_peak}) {
    DeviceTrack device = others_only;
    device.*figure = std::int64_t{2} << 20;
    EXPECT_TRUE(device_used(result, device));
  }
  DeviceTrack bounded = others_only;  // unmatched pids: the device's rise is the command's peak
  bounded.bounded_by_device = true;
  EXPECT_TRUE(device_used(result, bounded));
}

// The one function that decides a rank's peak: exact, and lifted to the command's peak on the
// device, only when the rank's processes were the command's only ones there and all exact.
TEST(RunResult, ARankAloneAndExactOnADeviceHasTheCommandsPeakThere) {
  RunResult result;
  result.measured = Measured::exact;
  result.exact_processes = 2;
  for (int ordinal : {0, 1}) {
    DeviceTrack device;
    device.info.device = ordinal;
    device.tree_peak = 300 * (ordinal + 1);        // what the samples saw
    device.footprint_peak = 1000 * (ordinal + 1);  // events plus contexts: the command's peak
    result.devices.push_back(device);
  }
  auto process = [](unsigned pid, int device) {
    ProcessReport report;
    report.peak.pid = pid;
    report.peak.local_pid = static_cast<int>(pid);
    report.peak.device = device;
    report.exact = true;
    return report;
  };
  result.processes = {process(10, 0), process(20, 1), process(21, 1)};
  RankPeaks alone{{}, {10}, {{0, 250, 1.0}}};   // the only process on GPU 0
  RankPeaks shared{{}, {20}, {{1, 400, 2.0}}};  // GPU 1 also ran pid 21, of no rank
  result.ranks = {alone, shared};
  const std::vector<RankRow> rows = rank_rows(result);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[0].devices.size(), 1u);
  EXPECT_EQ(rows[0].devices[0].device, &result.devices[0]);
  EXPECT_EQ(rows[0].devices[0].peak, 1000);
  EXPECT_TRUE(rows[0].devices[0].exact);
  EXPECT_EQ(rows[0].highest, 0);
  ASSERT_EQ(rows[1].devices.size(), 1u);
  EXPECT_EQ(rows[1].devices[0].peak, 400);
  EXPECT_FALSE(rows[1].devices[0].exact);
  result.measured = Measured::sampled;  // sampled: no rank's peak is exact
  EXPECT_FALSE(rank_rows(result)[0].devices[0].exact);
  EXPECT_EQ(rank_rows(result)[0].devices[0].peak, 250);
}

}  // namespace
}  // namespace gpumem::run
