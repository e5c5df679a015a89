// `gpumem run` across pid namespaces: NVML reports the host's pids (the simulated driver too),
// while gpumem and the command may run in a container of their own, or the command in a nested
// namespace. Real namespaces where `unshare` is permitted (root here); the simulator's fixed pid
// translation (`nvml_pid_offset`) everywhere else.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

// Beyond any pid the kernel hands out (PID_MAX_LIMIT): NVML's pids exist nowhere here.
constexpr unsigned kOffset = 4194304;

std::string config(unsigned offset) {
  return R"({"nvml_pid_offset": )" + std::to_string(offset) +
         R"(, "devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})";
}

std::string quoted(const std::string& word) {
  return "'" + word + "'";
}

std::string workload(const std::string& script) {
  return quoted(sim_tool()) + " workload " + quoted(script);
}

struct RunOutcome {
  CommandResult result;
  nlohmann::json summary;
};

RunOutcome run_gpumem(std::vector<std::string> prefix, std::vector<std::string> options,
                      std::vector<std::string> command) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = std::move(prefix);
  argv.insert(argv.end(), {gpumem_binary(), "run", "--json", json, "-i", "0.005"});
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  RunOutcome run{run_command(argv), {}};
  const std::string text = read_file(json);
  if (!text.empty()) run.summary = nlohmann::json::parse(text);
  return run;
}

TEST(RunNamespace, HostPidsAreMatchedToTheCommandsProcessByItsMemory) {
  SimGpu gpu(config(kOffset));
  const RunOutcome run =
      run_gpumem({}, {}, {sim_tool(), "workload", "alloc a 100MiB; sleep 300ms; free a"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["pid_namespace"]["nvml_pids"], "foreign");
  EXPECT_EQ(summary["pid_namespace"]["matched"], 1);
  EXPECT_EQ(summary["pid_namespace"]["unmatched"], 0);
  ASSERT_EQ(summary["processes"].size(), 1u);
  const auto& process = summary["processes"][0];
  ASSERT_TRUE(process["pid"].is_number()) << process.dump();
  EXPECT_EQ(process["nvml_pid"], process["pid"].get<unsigned>() + kOffset);
  EXPECT_EQ(process["name"], "gpumem-sim");
  EXPECT_EQ(process["mode"], "exact");
  EXPECT_EQ(process["sampled_peak_bytes"], 600 * MiB);  // its allocation and its context
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["sampled_peak_bytes"], 600 * MiB);
  EXPECT_EQ(device["context_bytes"], 500 * MiB);
  EXPECT_EQ(device["peak_bytes"], 600 * MiB);
  EXPECT_EQ(device["bounded_by_device_used"], false);
  EXPECT_NE(run.result.err.find("NVML lists pids that do not exist here"), std::string::npos)
      << run.result.err;
}

// One process counted exactly, then one that escaped the injection library: its host pid can be
// no process's here, so the device's rise bounds the peak, and the run says so.
TEST(RunNamespace, AnUnmatchedPidMakesTheRunMixedAndTheDeviceRiseBoundsThePeak) {
  SimGpu gpu(config(kOffset));
  const std::string line = workload("alloc a 100MiB; sleep 600ms") +
                           " & sleep 0.2; (unset CUDA_INJECTION64_PATH; exec " +
                           workload("alloc b 200MiB; sleep 300ms") + ") & wait";
  const RunOutcome run = run_gpumem({}, {}, {"sh", "-c", line});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["mode"], "mixed") << summary.dump(2);
  EXPECT_EQ(summary["pid_namespace"]["matched"], 1);
  EXPECT_EQ(summary["pid_namespace"]["unmatched"], 1);
  ASSERT_EQ(summary["processes"].size(), 2u) << summary.dump(2);
  for (const auto& process : summary["processes"]) {
    if (process["mode"] == "exact") {
      EXPECT_EQ(process["name"], "gpumem-sim");
      EXPECT_EQ(process["sampled_peak_bytes"], 600 * MiB);
    } else {
      EXPECT_TRUE(process["pid"].is_null());
      EXPECT_NE(process["reason"].get<std::string>().find("matches none"), std::string::npos);
      EXPECT_EQ(process["sampled_peak_bytes"], 700 * MiB);
    }
  }
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["bounded_by_device_used"], true);
  EXPECT_EQ(device["device_used_peak_bytes"].get<std::int64_t>() -
                device["device_used_start_bytes"].get<std::int64_t>(),
            1300 * MiB);
  EXPECT_EQ(device["peak_bytes"], 1300 * MiB);  // both processes, contexts included
  EXPECT_EQ(device["unmapped_peak_bytes"], 700 * MiB);
  EXPECT_NE(run.result.err.find("at least the device's rise over the run, 1.3 GiB"),
            std::string::npos)
      << run.result.err;
}

// Two injected processes that start together on one GPU may not be told apart; matched or not,
// the headline is never below what the device showed for them.
TEST(RunNamespace, ProcessesStartedTogetherNeverLeaveThePeakBelowTheDevice) {
  SimGpu gpu(config(kOffset));
  const std::string line = workload("alloc a 100MiB; sleep 400ms") + " & " +
                           workload("alloc b 200MiB; sleep 400ms") + " & wait";
  const RunOutcome run = run_gpumem({}, {}, {"sh", "-c", line});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["exact_processes"], 2) << summary.dump(2);
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["exact_peak_bytes"], 300 * MiB);
  EXPECT_EQ(device["peak_bytes"], 1300 * MiB);  // both allocations and both contexts
  const int matched = summary["pid_namespace"]["matched"].get<int>();
  EXPECT_EQ(summary["mode"], matched == 2 ? "exact" : "mixed");
  EXPECT_EQ(device["bounded_by_device_used"], matched != 2);
}

TEST(RunNamespace, SampledWithForeignPidsTheDeviceRiseBoundsThePeak) {
  SimGpu gpu(config(kOffset));
  const RunOutcome run = run_gpumem({}, {"--mode", "sampled"},
                                    {sim_tool(), "workload", "alloc a 100MiB; sleep 300ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "sampled");
  EXPECT_EQ(run.summary["pid_namespace"]["nvml_pids"], "foreign");
  const auto& device = run.summary["devices"][0];
  EXPECT_EQ(device["sampled_peak_bytes"], 0);  // no pid could be told to be the command's
  EXPECT_EQ(device["bounded_by_device_used"], true);
  EXPECT_EQ(device["peak_bytes"], 600 * MiB);
}

// Whether this machine lets the tests make pid and mount namespaces (root, or a permissive
// sandbox); the reason when not.
std::string namespaces_refused() {
  const CommandResult probe =
      run_command({"unshare", "--mount", "--pid", "--fork", "--mount-proc", "true"});
  return probe.exit_code == 0 ? std::string() : "unshare is not permitted here: " + probe.err;
}

// gpumem and the command in a container of their own: a pid namespace and a /proc that shows
// only it. The simulated driver sees host pids through a procfs of the host's namespace, as the
// real driver sees them in the kernel.
TEST(RunNamespace, InsideAContainerTheCommandsProcessIsMatchedAndNamed) {
  if (const std::string refused = namespaces_refused(); !refused.empty()) GTEST_SKIP() << refused;
  SimGpu gpu(config(0));
  const std::string host_proc = temporary_folder() + "/host-proc";
  std::filesystem::create_directories(host_proc);
  const std::string json = temporary_folder() + "/summary.json";
  const std::string inside =
      "mount -t proc proc " + quoted(host_proc) +
      " && exec unshare --pid --fork --mount-proc env GPUMEM_SIM_HOST_PROC=" + quoted(host_proc) +
      " " + quoted(gpumem_binary()) + " run --json " + quoted(json) + " -i 0.005 -- " +
      workload("alloc a 100MiB; sleep 300ms; free a");
  const CommandResult result = run_command({"unshare", "--mount", "sh", "-c", inside});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["pid_namespace"]["nvml_pids"], "foreign");
  EXPECT_NE(summary["pid_namespace"]["reason"].get<std::string>().find("pid namespace of its own"),
            std::string::npos);
  EXPECT_EQ(summary["pid_namespace"]["matched"], 1);
  ASSERT_EQ(summary["processes"].size(), 1u);
  const auto& process = summary["processes"][0];
  EXPECT_EQ(process["pid"], 2);  // gpumem is the namespace's init, the command its first child
  EXPECT_NE(process["nvml_pid"], 2);
  EXPECT_EQ(process["name"], "gpumem-sim");
  EXPECT_EQ(process["sampled_peak_bytes"], 600 * MiB);
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 600 * MiB);
  EXPECT_EQ(summary["devices"][0]["bounded_by_device_used"], false);
}

// The same container, with a process that escaped the injection library: it is the one NVML pid
// left unmatched, so the run is mixed and the device's rise bounds the peak.
TEST(RunNamespace, InsideAContainerAnEscapedProcessIsReportedAndTheDeviceBoundsThePeak) {
  if (const std::string refused = namespaces_refused(); !refused.empty()) GTEST_SKIP() << refused;
  SimGpu gpu(config(0));
  const std::string folder = temporary_folder();
  const std::string host_proc = folder + "/host-proc";
  std::filesystem::create_directories(host_proc);
  const std::string json = folder + "/summary.json";
  const std::string script = folder + "/command.sh";
  std::ofstream(script) << workload("alloc a 100MiB; sleep 600ms")
                        << " & sleep 0.2; (unset CUDA_INJECTION64_PATH; exec "
                        << workload("alloc b 200MiB; sleep 300ms") << ") & wait\n";
  const std::string inside =
      "mount -t proc proc " + quoted(host_proc) +
      " && exec unshare --pid --fork --mount-proc env GPUMEM_SIM_HOST_PROC=" + quoted(host_proc) +
      " " + quoted(gpumem_binary()) + " run --json " + quoted(json) + " -i 0.005 -- sh " +
      quoted(script);
  const CommandResult result = run_command({"unshare", "--mount", "sh", "-c", inside});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["mode"], "mixed") << summary.dump(2);
  EXPECT_EQ(summary["pid_namespace"]["matched"], 1);
  EXPECT_EQ(summary["pid_namespace"]["unmatched"], 1);
  ASSERT_EQ(summary["processes"].size(), 2u);
  for (const auto& process : summary["processes"]) {
    if (process["mode"] == "exact") {
      EXPECT_EQ(process["name"], "gpumem-sim");
      EXPECT_TRUE(process["pid"].is_number());
    } else {
      EXPECT_TRUE(process["pid"].is_null());
      EXPECT_EQ(process["sampled_peak_bytes"], 700 * MiB);
    }
  }
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["bounded_by_device_used"], true);
  EXPECT_EQ(device["peak_bytes"], 1300 * MiB);
  EXPECT_NE(result.err.find("pid namespace of its own"), std::string::npos) << result.err;
}

// gpumem in the host's namespace, the command in a nested one (`unshare --pid`): NSpid says how
// the process names itself, so it is counted exactly and its contexts reconciled.
TEST(RunNamespace, ACommandInANestedNamespaceIsMatchedThroughNSpid) {
  if (const std::string refused = namespaces_refused(); !refused.empty()) GTEST_SKIP() << refused;
  SimGpu gpu(config(0));
  const RunOutcome run = run_gpumem({}, {},
                                    {"unshare", "--pid", "--fork", sim_tool(), "workload",
                                     "alloc a 100MiB; sleep 300ms; free a"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 1);
  EXPECT_EQ(summary["escaped_processes"], 0);
  EXPECT_EQ(summary["pid_namespace"]["nvml_pids"], "own");
  EXPECT_EQ(summary["pid_namespace"]["nested"], true);
  ASSERT_EQ(summary["processes"].size(), 1u);
  EXPECT_EQ(summary["processes"][0]["name"], "gpumem-sim");
  EXPECT_EQ(summary["processes"][0]["pid"], summary["processes"][0]["nvml_pid"]);
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["exact_peak_bytes"], 100 * MiB);
  EXPECT_EQ(device["context_bytes"], 500 * MiB);
  EXPECT_EQ(device["peak_bytes"], 600 * MiB);
}

}  // namespace
}  // namespace gpumem::testing
