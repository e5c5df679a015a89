#include "quantities.hpp"

#include <time.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace gpumem::sim::tool {
namespace {

// Splits "1.5GiB" into 1.5 and "GiB".
std::optional<std::pair<double, std::string_view>> number_and_unit(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.'))
    ++digits;
  if (digits == 0) return std::nullopt;
  const std::string number(text.substr(0, digits));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0)
    return std::nullopt;
  return std::pair{value, text.substr(digits)};
}

std::int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000ll + ts.tv_nsec;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto [value, unit] = *parsed;
  double scale;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "KiB" || unit == "k" || unit == "K") {
    scale = 1024.0;
  } else if (unit == "MiB" || unit == "M") {
    scale = 1024.0 * 1024;
  } else if (unit == "GiB" || unit == "G") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "TiB" || unit == "T") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const double bytes = std::round(value * scale);
  if (bytes > 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  const auto [value, unit] = *parsed;
  double scale;
  if (unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else if (unit.empty() && value == 0) {
    scale = 0;
  } else {
    return std::nullopt;
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(value * scale)));
}

void hold_for(std::chrono::nanoseconds duration) {
  constexpr std::int64_t kSpinNs = 1'000'000;  // wake-up latency the kernel may add
  const std::int64_t deadline = now_ns() + duration.count();
  if (duration.count() > kSpinNs) {
    const std::int64_t wake = deadline - kSpinNs;
    const timespec at{static_cast<time_t>(wake / 1'000'000'000),
                      static_cast<long>(wake % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) != 0) {
    }
  }
  while (now_ns() < deadline) {
  }
}

}  // namespace gpumem::sim::tool
