// `gpumem run` on processes that see the GPUs through their own device masks: each is counted
// exactly, on the physical device it used, whatever its CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER (the events are keyed by the device's UUID).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

std::string workload(const std::string& environment, const std::string& script) {
  return environment + " '" + sim_tool() + "' workload '" + script + "'";
}

nlohmann::json run_json(const std::string& line, CommandResult& result) {
  const std::string json = temporary_folder() + "/summary.json";
  result =
      run_command({gpumem_binary(), "run", "--json", json, "-i", "0.005", "--", "sh", "-c", line});
  const std::string text = read_file(json);
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
}

const nlohmann::json& device(const nlohmann::json& summary, int ordinal) {
  for (const auto& each : summary["devices"]) {
    if (each["device"] == ordinal) return each;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no device " << ordinal << " in " << summary.dump(2);
  return none;
}

// kTwoGpus: CUDA ordinal 0 is the H200 (NVML 1), ordinal 1 the A100 (NVML 0).
TEST(RunDevices, ProcessesWithDifferentMasksOnOneGpuAreExactAndSummed) {
  SimGpu gpu;
  const std::string line =
      workload("CUDA_VISIBLE_DEVICES=1", "alloc a 100MiB; sleep 400ms") + " & " +
      workload("CUDA_VISIBLE_DEVICES=0,1", "device 1; alloc b 200MiB; sleep 400ms") + " & " +
      workload("CUDA_VISIBLE_DEVICES=GPU-aaaaaaaa", "alloc c 50MiB; sleep 400ms") + " & wait";
  CommandResult result;
  const nlohmann::json summary = run_json(line, result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 3);
  EXPECT_EQ(summary["escaped_processes"], 0);
  const auto& a100 = device(summary, 1);
  EXPECT_EQ(a100["uuid"], "GPU-aaaaaaaa-1111-4000-8000-000000000000");
  EXPECT_EQ(a100["exact_peak_bytes"], 350 * MiB);  // all three at once, on one physical GPU
  EXPECT_EQ(a100["peak_bytes"], 350 * MiB);
  EXPECT_EQ(device(summary, 0)["exact_peak_bytes"], 0);
  ASSERT_EQ(summary["processes"].size(), 3u);
  for (const auto& process : summary["processes"]) {
    EXPECT_EQ(process["device"], 1);
    EXPECT_EQ(process["mode"], "exact");
  }
}

// The driver charges an allocation (NVML shows it) before its call returns and the EXIT callback
// counts it, and releases a freed block before its EXIT. The simulator widens that window to
// 40 ms and makes NVML's process list take 8 ms (samples back to back), and each context costs
// 20 MiB: a reading inside the window must pass neither for more context (the block counted
// twice, a peak above what the device held) nor for less.
TEST(RunDevices, ABlockTheDriverShowsBeforeItsCallReturnsIsCountedOnce) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA A100-SXM4-40GB", "total_mib": 40960,
                              "reserved_mib": 256, "context_mib": 20}]})",
             "memory_return_delay=40000,nvml_process_delay=8000");
  const std::string line =
      workload("", "alloc a 100MiB; sleep 400ms; free a; sleep 100ms") + " & " +
      workload("", "alloc b 200MiB; sleep 400ms; free b; sleep 100ms") + " & " +
      workload("", "alloc c 50MiB; sleep 400ms; free c; sleep 100ms") + " & wait";
  CommandResult result;
  const nlohmann::json summary = run_json(line, result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 3);
  const auto& a100 = device(summary, 0);
  EXPECT_EQ(a100["exact_peak_bytes"], 350 * MiB);
  EXPECT_EQ(a100["context_bytes"], 60 * MiB) << a100.dump(2);
  EXPECT_EQ(a100["peak_bytes"], 410 * MiB) << a100.dump(2);  // all three, with their contexts
}

TEST(RunDevices, BusOrderAndUuidMasksLandOnThePhysicalDevice) {
  // FASTEST_FIRST is NVML's order (the A100 first); by bus id the H200 (19) comes first.
  SimGpu gpu(R"({"cuda_order": [0, 1], "devices": [
    {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
     "pci_bus_id": "00000000:3B:00.0", "total_mib": 40960},
    {"name": "NVIDIA H200", "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001",
     "pci_bus_id": "00000000:19:00.0", "total_mib": 143771}]})");
  const std::string line =
      workload("CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0",
               "alloc a 100MiB; sleep 400ms") +
      " & " + workload("CUDA_DEVICE_ORDER=PCI_BUS_ID", "device 1; alloc b 30MiB; sleep 400ms") +
      " & " +
      workload("CUDA_VISIBLE_DEVICES=GPU-bbbbbbbb-2222-4000-8000-000000000001",
               "alloc c 20MiB; sleep 400ms") +
      " & wait";
  CommandResult result;
  const nlohmann::json summary = run_json(line, result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 3);
  ASSERT_EQ(summary["devices"].size(), 2u);
  for (const auto& each : summary["devices"]) {  // whichever order gpumem itself sees them in
    EXPECT_EQ(each["exact_peak_bytes"], each["name"] == "NVIDIA H200" ? 120 * MiB : 30 * MiB)
        << each.dump();
  }
}

TEST(RunDevices, MigInstancesAreCountedByTheirOwnUuid) {
  SimGpu gpu(R"({"devices": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-0000-4000-8000-000000000000"},
    {"name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "uuid": "MIG-bbbbbbbb-0000-4000-8000-000000000001",
     "parent": 0, "total_mib": 40000},
    {"name": "NVIDIA H200", "uuid": "GPU-cccccccc-0000-4000-8000-000000000002"}]})");
  // gpumem sees the MIG instance (ordinal 0) and the H200 (ordinal 1).
  ::setenv("CUDA_VISIBLE_DEVICES", "MIG-bbbbbbbb,GPU-cccc", 1);
  const std::string line =
      workload("CUDA_VISIBLE_DEVICES=MIG-bbbbbbbb-0000-4000-8000-000000000001",
               "alloc a 50MiB; sleep 400ms") +
      " & " + workload("", "alloc b 10MiB; sleep 400ms") + " & " +
      workload("CUDA_VISIBLE_DEVICES=GPU-cccccccc", "alloc c 20MiB; sleep 400ms") + " & wait";
  CommandResult result;
  const nlohmann::json summary = run_json(line, result);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 3);
  EXPECT_EQ(device(summary, 0)["uuid"], "MIG-bbbbbbbb-0000-4000-8000-000000000001");
  EXPECT_EQ(device(summary, 0)["exact_peak_bytes"], 60 * MiB);
  EXPECT_EQ(device(summary, 1)["exact_peak_bytes"], 20 * MiB);
}

TEST(RunDevices, AGpusMigDevicesAreSummedIntoTheGpu) {
  SimGpu gpu(R"({"devices": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-0000-4000-8000-000000000000"},
    {"name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "uuid": "MIG-bbbbbbbb-0000-4000-8000-000000000001",
     "parent": 0, "total_mib": 40000},
    {"name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "uuid": "MIG-dddddddd-0000-4000-8000-000000000003",
     "parent": 0, "total_mib": 40000},
    {"name": "NVIDIA H200", "uuid": "GPU-cccccccc-0000-4000-8000-000000000002"}]})");
  // gpumem sees the two GPUs; its workers each get a MIG device of the A100.
  const std::string line =
      workload("CUDA_VISIBLE_DEVICES=MIG-bbbbbbbb", "alloc a 50MiB; sleep 400ms") + " & " +
      workload("CUDA_VISIBLE_DEVICES=MIG-dddddddd", "alloc b 70MiB; sleep 400ms") + " & " +
      workload("CUDA_VISIBLE_DEVICES=GPU-aaaaaaaa", "alloc c 30MiB; sleep 400ms") + " & wait";
  CommandResult result;
  const nlohmann::json summary = run_json(line, result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary["mode"], "exact") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 3);
  ASSERT_EQ(summary["devices"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(device(summary, 0)["uuid"], "GPU-aaaaaaaa-0000-4000-8000-000000000000");
  EXPECT_EQ(device(summary, 0)["exact_peak_bytes"], 150 * MiB);  // both MIG devices and the GPU
  EXPECT_EQ(device(summary, 1)["exact_peak_bytes"], 0);
}

TEST(RunDevices, ADeviceGpumemDoesNotMeasureIsNamedWithWhatWasCountedThere) {
  SimGpu gpu;
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--device", "0", "--", sim_tool(), "workload",
                   "device 1; alloc a 10MiB; free a"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("used a device gpumem does not measure (UUID "
                            "aaaaaaaa-1111-4000-8000-000000000000, peak 10.0 MiB counted)"),
            std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace gpumem::testing
