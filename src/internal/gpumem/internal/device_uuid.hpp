// The CUDA driver's UUID of a device, for the injection library, which names the devices of its
// events without NVML (loading NVML inside every measured process would cost tens of
// milliseconds on a multi-GPU node).
#pragma once

#include <array>
#include <optional>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::driver {

// The 16 bytes cuDeviceGetUuid_v2 (else cuDeviceGetUuid) gives for CUDA ordinal `ordinal` of
// this process: a MIG device's own UUID for a MIG device. std::nullopt when the driver is not
// loaded, lacks the call, or refuses the ordinal. Never throws; thread-safe.
std::optional<std::array<unsigned char, 16>> device_uuid(int ordinal) noexcept;

}  // namespace gpumem::driver

#pragma GCC visibility pop
