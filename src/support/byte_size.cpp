#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "gpumem/internal/byte_size.hpp"

namespace gpumem::detail {
namespace {

struct Unit {
  std::string_view name;  // lower case
  double bytes;
};

constexpr Unit kUnits[] = {
    {"b", 1},           {"kb", 1e3},           {"mb", 1e6},
    {"gb", 1e9},        {"tb", 1e12},          {"kib", 1024.0},
    {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
};

bool space(char c) {
  return c == ' ' || c == '\t';
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text, std::string* error) noexcept {
  auto fail = [&](const char* why) -> std::optional<std::uint64_t> {
    if (error != nullptr) {
      try {
        *error = why;
      } catch (...) {
        // Out of memory for the message: the caller still learns that it failed.
      }
    }
    return std::nullopt;
  };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  // The number: digits with at most one decimal point (no sign, exponent or hexadecimal).
  std::size_t end = 0;
  bool digits = false, point = false;
  for (; end < text.size(); ++end) {
    const char c = text[end];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) return fail(text.empty() ? "empty: write a size such as 2 GiB" : "not a number");
  double number = 0;
  const auto [past, code] = std::from_chars(text.data(), text.data() + end, number);
  if (code != std::errc() || past != text.data() + end || !std::isfinite(number))
    return fail("not a number");
  std::string_view rest = text.substr(end);
  while (!rest.empty() && space(rest.front())) rest.remove_prefix(1);
  if (rest.empty()) return fail("no unit: write 2 GiB (binary) or 2 GB (decimal)");
  for (const Unit& unit : kUnits) {
    if (rest.size() != unit.name.size()) continue;
    bool same = true;
    for (std::size_t at = 0; at < rest.size() && same; ++at)
      same = std::tolower(static_cast<unsigned char>(rest[at])) == unit.name[at];
    if (!same) continue;
    const double bytes = number * unit.bytes;
    // 2^63: the first size that does not fit a signed 64-bit byte count.
    if (!(bytes < 9223372036854775808.0)) return fail("too large (at most 8 EiB)");
    return static_cast<std::uint64_t>(bytes);
  }
  return fail("unknown unit: use B, kB, MB, GB, TB or KiB, MiB, GiB, TiB");
}

std::string byte_size_text(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  // The magnitude as unsigned, so that the most negative count has one too.
  const std::uint64_t magnitude =
      bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  if (magnitude < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(magnitude) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%s%.1f %s", bytes < 0 ? "-" : "", value, kUnits[unit]);
  return text;
}

}  // namespace gpumem::detail
