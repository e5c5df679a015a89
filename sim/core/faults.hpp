// GPUMEM_SIM_FAULTS: the failures a process asks the simulator for, read once per library load.
#pragma once

#include <optional>
#include <vector>

namespace gpumem::sim {

struct Faults {
  std::optional<int> nvml_init;  // nvmlInit* return this
  std::optional<int> cuda_init;  // cuInit returns this
  std::optional<int> cuda_uuid;  // cuDeviceGetUuid and cuDeviceGetUuid_v2 return this
  bool nvml_memory_v1_only = false;
  bool nvml_memory_v2_only = false;
  bool cupti_busy = false;
  std::vector<unsigned> lost;  // NVML indices lost from the start
  // Microseconds a plain allocation or free waits after the memory is charged or released (NVML
  // shows it) before the call returns, and its EXIT callback fires: the window in which the
  // driver's figures and a tool's event count differ, widened.
  long memory_return_delay_us = 0;
  // Microseconds the compute process list (nvmlDeviceGetComputeRunningProcesses*) takes, as on
  // a busy multi-GPU node; it answers the list as it was halfway through.
  long nvml_process_delay_us = 0;
};

// Parses
// "nvml_init=18,cuda_uuid=101,cupti_busy,lost=1,memory_return_delay=20000,nvml_process_delay=5000";
// unknown or malformed entries are reported on stderr and ignored, so a typo never crashes the
// program under test.
Faults parse_faults(const char* text);

// This process's faults (GPUMEM_SIM_FAULTS, parsed on first use).
const Faults& faults();

}  // namespace gpumem::sim
