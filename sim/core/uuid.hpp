// Device UUID text ("GPU-1b0a4a6e-0b8f-…") to the 16 raw bytes cuDeviceGetUuid returns.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace gpumem::sim {

using UuidBytes = std::array<unsigned char, 16>;

// Accepts an optional "GPU-"/"MIG-" prefix and 32 hex digits with any dashes.
std::optional<UuidBytes> parse_uuid_bytes(std::string_view text);

}  // namespace gpumem::sim
