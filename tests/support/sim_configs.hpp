// Device configurations for the tests of driver loading, identity, the queries and `gpumem run`,
// beside support/sim_gpu.hpp's kTwoGpus (ordinal 0 is the H200 at NVML 1, ordinal 1 the A100-40GB
// at NVML 0).
#pragma once

#include <cstdint>
#include <string>

#include "support/sim_gpu.hpp"

namespace gpumem::testing {

// kTwoGpus in MiB, as gpu_mem_get reports it (v2: used excludes the reservation).
inline constexpr std::int64_t kH200Total = 143771, kH200Reserved = 542;
inline constexpr std::int64_t kA100Total = 40960, kA100Reserved = 256;

// CUDA's FASTEST_FIRST order [1,0] differs from the PCI order [0,1]: only CUDA itself knows it.
inline constexpr const char* kFastestFirstDiffers = R"({
  "cuda_order": [1, 0],
  "devices": [
    {"name": "NVIDIA T4", "uuid": "GPU-11111111-1111-4000-8000-000000000000",
     "pci_bus_id": "00000000:10:00.0", "total_mib": 15360, "reserved_mib": 100, "context_mib": 0},
    {"name": "NVIDIA H100", "uuid": "GPU-22222222-2222-4000-8000-000000000001",
     "pci_bus_id": "00000000:20:00.0", "total_mib": 81559, "reserved_mib": 300, "context_mib": 0}
  ]})";

// Two identical boards: gpu_with_max_free_mem must pick the first on ties.
inline constexpr const char* kTwins = R"({
  "devices": [
    {"name": "NVIDIA L4", "total_mib": 23034, "reserved_mib": 34, "context_mib": 0},
    {"name": "NVIDIA L4", "total_mib": 23034, "reserved_mib": 34, "context_mib": 0}
  ]})";

// One device whose context costs 500 MiB, to see preload charge it.
inline constexpr const char* kWithContext = R"({
  "devices": [
    {"name": "NVIDIA H200", "uuid": "GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01",
     "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542, "context_mib": 500}
  ]})";

// One H200 whose context costs 500 MiB, the simulator's defaults otherwise: the edges and overlaps
// of `gpumem run` (tests/cli/run_edges_test.cpp, run_overlap_test.cpp).
inline constexpr const char* kContext500 =
    R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})";

// A GPU with a MIG instance, beside a whole GPU: NVML enumerates the two GPUs by index and the
// instance only under its GPU (and by UUID).
inline constexpr const char* kMig = R"({
  "devices": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
     "pci_bus_id": "00000000:10:00.0", "total_mib": 81920, "reserved_mib": 474, "context_mib": 0},
    {"name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "uuid": "MIG-cccccccc-3333-4000-8000-000000000002",
     "pci_bus_id": "00000000:10:00.0", "total_mib": 40192, "reserved_mib": 0, "context_mib": 0,
     "parent": 0},
    {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-dddddddd-4444-4000-8000-000000000003",
     "pci_bus_id": "00000000:30:00.0", "total_mib": 81559, "reserved_mib": 520, "context_mib": 0}
  ]})";

inline std::string with_record_bytes(int bytes) {
  return std::string(R"({"process_record_bytes": )") + std::to_string(bytes) +
         R"(, "devices": [{"name": "NVIDIA A10", "total_mib": 23028, "context_mib": 0}]})";
}

}  // namespace gpumem::testing
