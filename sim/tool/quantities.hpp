// Sizes ("512MiB", "1.5G") and durations ("250us", "2s") in workload scripts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpumem::sim::tool {

// Units B, KiB/k/K, MiB/M, GiB/G, TiB/T (all binary); a bare number is bytes.
std::optional<std::uint64_t> parse_size(std::string_view text);

// Units ns, us, ms, s.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

// Sleeps until `duration` has passed, to within microseconds: the kernel sleeps the bulk, a busy
// wait the last stretch.
void hold_for(std::chrono::nanoseconds duration);

}  // namespace gpumem::sim::tool
