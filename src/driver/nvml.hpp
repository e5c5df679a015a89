// NVML, loaded and initialised on first use (thread-safe), never at static initialisation, and
// never shut down from a static destructor (other threads may still be reading).
#pragma once

#include <string>

#include "driver/abi/nvml.hpp"

namespace gpumem::driver {

struct Nvml {
  bool ready = false;  // loaded, required symbols resolved, and initialised
  std::string why;     // when not ready: "NVML not found", "driver/library version mismatch", …
  abi::PFN_nvmlErrorString errorString = nullptr;
  abi::PFN_nvmlSystemGetDriverVersion systemGetDriverVersion = nullptr;
  abi::PFN_nvmlDeviceGetCount deviceGetCount = nullptr;              // _v2, else v1
  abi::PFN_nvmlDeviceGetHandleByIndex deviceGetHandleByIndex = nullptr;  // _v2, else v1
  abi::PFN_nvmlDeviceGetHandleByUUID deviceGetHandleByUUID = nullptr;
  abi::PFN_nvmlDeviceGetHandleByPciBusId deviceGetHandleByPciBusId = nullptr;  // _v2, else v1
  abi::PFN_nvmlDeviceGetIndex deviceGetIndex = nullptr;
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

// "NVML_ERROR_GPU_IS_LOST: GPU is lost" style text for a return code.
std::string nvml_error_text(abi::nvmlReturn_t code);

}  // namespace gpumem::driver
