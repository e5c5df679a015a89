// The one place gpumem reads a device's memory from NVML: every query (gpu_mem_get and its
// byte, all-device and handle forms, device_info, the sampler's reads through the handle forms)
// goes through read_memory. Once nvmlDeviceGetMemoryInfo_v2 is known to work the read is one
// indirect call; the first read, a driver with v1 memory info only, and every failure take the
// out-of-line path, which negotiates the version (driver::memory_info) and records why a read
// failed (device_errors.hpp).
#pragma once

#include <atomic>
#include <optional>

#include "driver/abi/nvml.hpp"
#include "driver/nvml.hpp"
#include "gpumem/memory.hpp"

namespace gpumem::detail {

// The negotiating path: nullopt for a null device or a failed read, with a diagnostic naming
// CUDA ordinal `ordinal`.
std::optional<GPUMemoryBytes> read_memory_negotiating(abi::nvmlDevice_t device,
                                                      int ordinal) noexcept;

// The fast path alone: true when the one indirect call answered into `memory`. Callers take
// read_memory_negotiating otherwise, out of line, so that the fast path keeps next to nothing
// across the call.
[[gnu::always_inline]] inline bool read_memory_fast(abi::nvmlDevice_t device,
                                                    abi::nvmlMemory_v2_t& memory) noexcept {
  const auto read = driver::g_working_memory_v2.load(std::memory_order_acquire);
  if (read == nullptr || device == nullptr) [[unlikely]]
    return false;
  memory.version = abi::kNvmlMemory_v2;
  return read(device, &memory) == abi::NVML_SUCCESS;
}

// The device's memory in bytes (`reserved` 0 where only v1 works), nullopt on failure. Never
// throws; thread-safe.
[[gnu::always_inline]] inline std::optional<GPUMemoryBytes> read_memory(abi::nvmlDevice_t device,
                                                                        int ordinal) noexcept {
  abi::nvmlMemory_v2_t memory;
  if (read_memory_fast(device, memory)) [[likely]] {
    return GPUMemoryBytes{memory.total, memory.free, memory.used, memory.reserved};
  }
  return read_memory_negotiating(device, ordinal);
}

}  // namespace gpumem::detail
