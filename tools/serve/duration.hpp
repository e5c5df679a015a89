// Durations on the command line: "10ms", "1s", "30s", "500us", "1.5s", "2m".
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace gpumem::serve {

// A positive duration with a unit (ns, us, µs, ms, s, m, h); nullopt for anything else.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);
// The shortest exact spelling: 10ms, 30s, 500us, 1500ms.
std::string format_duration(std::chrono::nanoseconds duration);

}  // namespace gpumem::serve
