// NVML's process list of a device, telling a failed reading apart from an empty one: the public
// gpumem::device_processes gives an empty list for both, which is enough for showing processes
// but not for saying that nobody else held the device (gpumem run's out-of-memory records).
#pragma once

#include <optional>
#include <vector>

#include "gpumem/device.hpp"

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::detail {

// The processes NVML lists on CUDA ordinal `ordinal` (compute and graphics, each once), or
// std::nullopt when the device is unknown or NVML could not list them (not loaded, the device
// lost, no permission). Never throws.
std::optional<std::vector<ProcessMemory>> device_process_list(int ordinal) noexcept;

}  // namespace gpumem::detail
