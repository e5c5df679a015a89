// The CUDA driver's UUID of a device, for the injection library, which names the devices of its
// events without NVML (loading NVML inside every measured process would cost tens of
// milliseconds on a multi-GPU node).
#pragma once

#include <array>
#include <optional>
#include <string>

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::driver {

// The 16 bytes cuDeviceGetUuid_v2 (else cuDeviceGetUuid) gives for CUDA ordinal `ordinal` of
// this process: a MIG device's own UUID for a MIG device. std::nullopt when the driver is not
// loaded, lacks the call, or refuses the ordinal. Never throws; thread-safe.
std::optional<std::array<unsigned char, 16>> device_uuid(int ordinal) noexcept;

// The 16 bytes as NVML writes a UUID's hex, without its "GPU-" or "MIG-" prefix (the bytes do
// not say which): "bbbbbbbb-2222-4000-8000-000000000001". The one writer of a UUID: the device
// map (identity) prefixes it, the monitor and the out-of-memory records use it bare.
std::string uuid_text(const std::array<unsigned char, 16>& bytes);

}  // namespace gpumem::driver
