#include "duration.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>

namespace gpumem::serve {
namespace {

struct Unit {
  std::string_view suffix;
  double nanoseconds;
};
constexpr Unit kUnits[] = {{"ns", 1.0}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6},
                           {"s", 1e9},  {"m", 60e9}, {"h", 3600e9}};

}  // namespace

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  std::size_t digits = 0;
  bool seen_point = false;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                  (text[digits] == '.' && !seen_point))) {
    seen_point = seen_point || text[digits] == '.';
    ++digits;
  }
  std::string_view number = text.substr(0, digits);
  std::string_view suffix = text.substr(digits);
  if (number.empty() || number == "." || digits > 18) return std::nullopt;
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    double value = std::stod(std::string(number)) * unit.nanoseconds;
    // Up to a day; anything longer is a typo for an exporter's interval or window.
    if (!(value >= 1.0) || value > 86400e9) return std::nullopt;
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(value)));
  }
  return std::nullopt;
}

std::string format_duration(std::chrono::nanoseconds duration) {
  std::int64_t ns = duration.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace gpumem::serve
