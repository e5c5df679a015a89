// NVML, loaded and initialised on first use (thread-safe), never at static initialisation, and
// never shut down from a static destructor (other threads may still be reading).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "driver/abi/nvml.hpp"

namespace gpumem::driver {

struct Nvml {
  bool ready = false;  // loaded, required symbols resolved, and initialised
  std::string why;     // when not ready: "NVML not found", "driver/library version mismatch", …
  abi::PFN_nvmlSystemGetDriverVersion systemGetDriverVersion = nullptr;
  abi::PFN_nvmlDeviceGetCount deviceGetCount = nullptr;                  // _v2, else v1
  abi::PFN_nvmlDeviceGetHandleByIndex deviceGetHandleByIndex = nullptr;  // _v2, else v1
  abi::PFN_nvmlDeviceGetHandleByUUID deviceGetHandleByUUID = nullptr;
  abi::PFN_nvmlDeviceGetHandleByPciBusId deviceGetHandleByPciBusId = nullptr;  // _v2, else v1
  abi::PFN_nvmlDeviceGetIndex deviceGetIndex = nullptr;
  abi::PFN_nvmlDeviceGetMaxMigDeviceCount deviceGetMaxMigDeviceCount = nullptr;
  abi::PFN_nvmlDeviceGetMigDeviceHandleByIndex deviceGetMigDeviceHandleByIndex = nullptr;
  abi::PFN_nvmlDeviceGetName deviceGetName = nullptr;
  abi::PFN_nvmlDeviceGetUUID deviceGetUUID = nullptr;
  abi::PFN_nvmlDeviceGetPciInfo deviceGetPciInfo = nullptr;  // _v3, else _v2, else v1
  abi::PFN_nvmlDeviceGetMemoryInfo deviceGetMemoryInfo = nullptr;
  abi::PFN_nvmlDeviceGetMemoryInfo_v2 deviceGetMemoryInfo_v2 = nullptr;
  abi::PFN_nvmlDeviceGetRunningProcesses deviceGetComputeRunningProcesses = nullptr;   // _v3…v1
  abi::PFN_nvmlDeviceGetRunningProcesses deviceGetGraphicsRunningProcesses = nullptr;  // _v3…v1
  int runningProcessesVersion = 0;  // which of _v3/_v2/v1 the two above are
  abi::PFN_nvmlDeviceGetRunningProcessDetailList deviceGetRunningProcessDetailList = nullptr;
};

// Loads and initialises once; the same object afterwards.
const Nvml& nvml() noexcept;

// "NVML_ERROR_GPU_IS_LOST": the code's name alone (works without a loaded NVML).
std::string nvml_error_name(abi::nvmlReturn_t code);

// A device's memory in bytes. `reserved` is 0 where only v1 memory info works (its `used`
// includes the reservation).
struct MemoryReading {
  unsigned long long total = 0;
  unsigned long long free = 0;
  unsigned long long used = 0;
  unsigned long long reserved = 0;
};
// Reads through whichever memory-info version this driver supports: _v2 first, v1 where _v2 is
// missing or refused; the choice is remembered, so later reads are one driver call.
abi::nvmlReturn_t memory_info(abi::nvmlDevice_t device, MemoryReading& reading) noexcept;

// Set once _v2 memory info is known to work: samplers then read with exactly one indirect call.
extern std::atomic<abi::PFN_nvmlDeviceGetMemoryInfo_v2> g_working_memory_v2;

// One process's memory on a device; used_bytes is NVML_VALUE_NOT_AVAILABLE where the driver
// cannot tell.
struct ProcessRecord {
  unsigned pid = 0;
  unsigned long long used_bytes = 0;
};
// Compute and graphics processes merged by pid: nvmlDeviceGetRunningProcessDetailList where the
// driver has it, else legacy_processes.
abi::nvmlReturn_t running_processes(abi::nvmlDevice_t device,
                                    std::vector<ProcessRecord>& out) noexcept;
// The versioned list API alone (FUNCTION_NOT_FOUND where the driver lacks it).
abi::nvmlReturn_t detail_list_processes(abi::nvmlDevice_t device,
                                        std::vector<ProcessRecord>& out) noexcept;
// nvmlDeviceGet{Compute,Graphics}RunningProcesses _v3 (record stride probed), _v2 or v1.
abi::nvmlReturn_t legacy_processes(abi::nvmlDevice_t device,
                                   std::vector<ProcessRecord>& out) noexcept;
// The _v3 record stride the driver was seen to write (24 or 32), 0 before it was probed.
std::size_t probed_process_stride() noexcept;

}  // namespace gpumem::driver
