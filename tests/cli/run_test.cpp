// `gpumem run` measuring simulated workloads: exact and sampled peaks, processes that fork.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

struct Measured {
  CommandResult result;
  nlohmann::json summary;
};

Measured measure(const std::string& script, std::vector<std::string> options = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = {gpumem_binary(), "run", "--json", json};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", sim_tool(), "workload", script});
  Measured measured{run_command(argv), {}};
  const std::string text = read_file(json);
  if (!text.empty()) measured.summary = nlohmann::json::parse(text);
  return measured;
}

TEST(Run, ExactModeCatchesAOneMillisecondSpike) {
  SimGpu gpu;
  const Measured run = measure("alloc a 100MiB; spike 50MiB 1ms; free a");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["schema"], "gpumem.run/1");
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 1);
  EXPECT_TRUE(summary["fallback_reason"].is_null());
  const auto& h200 = summary["devices"][0];
  EXPECT_EQ(h200["name"], "NVIDIA H200");
  EXPECT_EQ(h200["peak_bytes"], 150 * MiB);
  EXPECT_EQ(h200["exact_peak_bytes"], 150 * MiB);
  EXPECT_EQ(summary["devices"][1]["peak_bytes"], 0);
  EXPECT_NE(run.result.err.find("peak 150.0 MiB process footprint"), std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("measured exactly"), std::string::npos);
}

TEST(Run, ExactPeakSumsTheForkedChildrenOfTheCommand) {
  SimGpu gpu;
  // Neither process frees before the parent has waited for the child, so both hold their
  // memory at once: the parent 100 + 30 MiB, the child 30 MiB.
  const Measured run = measure("alloc a 100MiB; fork; alloc b 30MiB; sleep 20ms");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  EXPECT_EQ(run.summary["exact_processes"], 2);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 160 * MiB);
}

TEST(Run, ExactPeakCountsAChildProcessThatAllocates) {
  SimGpu gpu;
  // A shell in between: the CUDA process is a grandchild of gpumem.
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--json", json, "--", "sh", "-c",
                   "'" + sim_tool() + "' workload 'device 1; spike 7MiB 1ms' && '" + sim_tool() +
                       "' workload 'spike 5MiB 1ms'"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 2);
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 5 * MiB);
  EXPECT_EQ(summary["devices"][1]["peak_bytes"], 7 * MiB);
}

TEST(Run, SampledModeSumsThePerProcessUsageOfTheTree) {
  SimGpu gpu;
  const Measured run = measure("alloc a 100MiB; fork; alloc b 20MiB; sleep 300ms",
                               {"--mode", "sampled", "--interval", "0.005"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "sampled");
  EXPECT_EQ(run.summary["requested_mode"], "sampled");
  EXPECT_TRUE(run.summary["devices"][0]["exact_peak_bytes"].is_null());
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 140 * MiB);
  EXPECT_EQ(run.summary["devices"][0]["sampled_peak_bytes"], 140 * MiB);
  EXPECT_EQ(run.summary["devices"][0]["device_used_peak_bytes"], 140 * MiB);
  EXPECT_EQ(run.summary["processes"].size(), 2u);
  EXPECT_NE(run.result.err.find("sampled every 5 ms"), std::string::npos) << run.result.err;
}

TEST(Run, SampledModeKeepsCountingAnOrphanedGrandchild) {
  SimGpu gpu;
  // The subshell exits at once, so the workload is reparented (to gpumem, a subreaper) while
  // the command still runs; the command waits until the workload holds its memory.
  const std::string folder = temporary_folder();
  const std::string json = folder + "/summary.json", ready = folder + "/ready";
  const CommandResult result = run_command(
      {gpumem_binary(), "run", "--mode", "sampled", "--interval", "0.005", "--json", json, "--",
       "sh", "-c",
       "( '" + sim_tool() + "' workload 'alloc a 10MiB; print ready; sleep 300ms' > '" + ready +
           "' & ); until [ -s '" + ready + "' ]; do sleep 0.01; done; sleep 0.5"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 10 * MiB) << summary.dump(2);
}

TEST(Run, SampledPeakIncludesWhatTheDriverChargesForContexts) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const Measured run = measure("alloc a 100MiB; sleep 300ms");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "exact");
  EXPECT_EQ(run.summary["devices"][0]["sampled_peak_bytes"], 600 * MiB);
  // The headline is the process footprint: never below what NVML showed the processes holding.
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 600 * MiB);
  EXPECT_EQ(run.summary["devices"][0]["quantity"], "process_footprint");
}

TEST(Run, FallsBackToSamplingWhenCuptiIsBusyAndSaysWhy) {
  SimGpu gpu(kTwoGpus, "cupti_busy");
  const Measured run = measure("alloc a 100MiB; sleep 300ms; free a");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "sampled");
  EXPECT_FALSE(run.summary["fallback_reason"].is_null());
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 100 * MiB);
  EXPECT_NE(run.result.err.find("exact unavailable"), std::string::npos) << run.result.err;
}

// A process whose device the driver names no UUID for cannot be counted under the device's slot:
// it stops counting after the call that found out, takes back what it had counted (nothing
// reached the device's level), and is sampled instead, with the reason. Its first allocation is
// the one that found out, so the sampled peak is the whole of what the device held.
TEST(Run, AProcessWhoseDeviceHasNoUuidIsSampledInsteadAndSaysWhy) {
  SimGpu gpu(kTwoGpus, "cuda_uuid=101");
  const Measured run = measure("alloc a 100MiB; sleep 300ms; alloc b 20MiB; sleep 300ms");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "sampled") << run.summary.dump(2);
  EXPECT_EQ(run.summary["exact_processes"], 0);
  EXPECT_NE(run.summary["fallback_reason"].get<std::string>().find(
                "the driver gave no UUID for CUDA device 0"),
            std::string::npos)
      << run.summary.dump(2);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 120 * MiB);
  EXPECT_TRUE(run.summary["devices"][0]["exact_peak_bytes"].is_null());
}

TEST(Run, LeavesAUsersInjectionLibraryAloneAndSamples) {
  SimGpu gpu;
  ::setenv("CUDA_INJECTION64_PATH",
           (std::string(GPUMEM_BUILD_DIR) + "/lib/libgpumem_inject.so").c_str(), 1);
  const Measured run = measure("alloc a 100MiB; sleep 300ms; free a");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "sampled");
  EXPECT_NE(run.summary["fallback_reason"].get<std::string>().find("CUDA_INJECTION64_PATH"),
            std::string::npos);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 100 * MiB);
  const CommandResult exact =
      run_command({gpumem_binary(), "run", "--mode", "exact", "--", "true"});
  EXPECT_EQ(exact.exit_code, 2);
  ::unsetenv("CUDA_INJECTION64_PATH");
}

TEST(Run, DeviceOptionRestrictsTheReport) {
  SimGpu gpu;
  const Measured run = measure("device 1; spike 5MiB 1ms", {"--device", "1"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["devices"].size(), 1u);
  EXPECT_EQ(run.summary["devices"][0]["device"], 1);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 5 * MiB);
  const CommandResult bad = run_command({gpumem_binary(), "run", "--device", "7", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

}  // namespace
}  // namespace gpumem::testing
