#include "query/memory_read.hpp"

#include "query/device_errors.hpp"

namespace gpumem::detail {

std::optional<GPUMemoryBytes> read_memory_negotiating(abi::nvmlDevice_t device,
                                                      int ordinal) noexcept {
  if (device == nullptr) return std::nullopt;
  driver::MemoryReading reading;
  const abi::nvmlReturn_t rc = driver::memory_info(device, reading);
  if (rc != abi::NVML_SUCCESS) {
    note_nvml_failure(ordinal, "memory info", rc);
    return std::nullopt;
  }
  return GPUMemoryBytes{reading.total, reading.free, reading.used, reading.reserved};
}

}  // namespace gpumem::detail
