// NVML's process list of a device, telling a failed reading apart from an empty one: the public
// gpumem::device_processes gives an empty list for both, which is enough for showing processes
// but not for saying that nobody else held the device (gpumem run's out-of-memory records).
#pragma once

#include <optional>
#include <vector>

#include "gpumem/device.hpp"

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

// The processes NVML lists on CUDA ordinal `ordinal` (compute and graphics, each once), or
// std::nullopt when the device is unknown or NVML could not list them (not loaded, the device
// lost, no permission). Never throws.
std::optional<std::vector<ProcessMemory>> device_process_list(int ordinal) noexcept;

}  // namespace gpumem::detail

#pragma GCC visibility pop
