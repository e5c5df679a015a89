// Device identity: which physical GPU (NVML) a CUDA ordinal is, and what runs on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/memory.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

struct DeviceInfo {
  int ordinal = -1;         // CUDA ordinal, as the calling program sees it
  unsigned nvml_index = 0;  // NVML's index, as nvidia-smi shows it
  std::string name;
  std::string uuid;        // "GPU-…" or "MIG-…"
  std::string pci_bus_id;  // "00000000:19:00.0"
  GPUMemoryBytes memory;
};

struct ProcessMemory {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_bytes;  // nullopt where the driver cannot tell
  friend bool operator==(const ProcessMemory&, const ProcessMemory&) = default;
};

// Number of CUDA-visible devices; 0 without a driver or GPU.
int device_count() noexcept;
// The calling thread's current CUDA ordinal; 0 when CUDA is unused in this process.
int current_device_ordinal() noexcept;
std::optional<DeviceInfo> device_info(int id = current_device) noexcept;
// Every visible device, in CUDA ordinal order.
std::vector<DeviceInfo> devices() noexcept;
// Processes holding memory on the device (compute and graphics), robust to the driver's
// process-record size. Empty on failure.
std::vector<ProcessMemory> device_processes(int id = current_device) noexcept;
// The installed driver's version string ("580.65.06"), empty without NVML.
std::string driver_version() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
