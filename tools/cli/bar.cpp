#include "bar.hpp"

#include <algorithm>

namespace gpumem::cli {
namespace {

__extension__ typedef unsigned __int128 Wide;

// ceil(part * scale / whole), exact for any device size (no overflow: 128-bit).
std::uint64_t scaled_up(std::uint64_t part, std::uint64_t scale, std::uint64_t whole) {
  const Wide product = static_cast<Wide>(part) * scale;
  return static_cast<std::uint64_t>((product + whole - 1) / whole);
}

constexpr const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};

std::string repeat(const char* piece, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += piece;
  return out;
}

}  // namespace

std::string usage_bar(const BarValues& values, std::size_t cells, const TextStyle& style) {
  if (values.total == 0) return "?";
  const std::uint64_t used = std::min(values.used, values.total);
  const std::uint64_t peak = std::min(std::max(values.peak.value_or(0), used), values.total);
  std::string used_part;
  std::size_t used_cells = 0;
  if (style.unicode) {
    const std::uint64_t eighths = scaled_up(used, cells * 8, values.total);
    used_part = repeat("█", eighths / 8) + kEighths[eighths % 8];
    used_cells = eighths / 8 + (eighths % 8 != 0 ? 1 : 0);
  } else {
    used_cells = scaled_up(used, cells, values.total);
    used_part = repeat("#", used_cells);
  }
  const std::size_t peak_cells =
      std::max<std::size_t>(scaled_up(peak, cells, values.total), used_cells) - used_cells;
  std::string peak_part = repeat(style.unicode ? "░" : "=", peak_cells);
  const std::uint64_t percent = scaled_up(used, 100, values.total);
  if (style.colour) {
    const char* colour = percent < 70 ? "\033[32m" : percent < 90 ? "\033[33m" : "\033[31m";
    if (!used_part.empty()) used_part = colour + used_part + "\033[0m";
    if (!peak_part.empty()) peak_part = "\033[2m" + peak_part + "\033[0m";
  }
  std::string percent_text = std::to_string(percent) + "%";
  percent_text.insert(0, 4 - percent_text.size(), ' ');
  return "[" + used_part + peak_part + std::string(cells - used_cells - peak_cells, ' ') + "] " +
         percent_text;
}

}  // namespace gpumem::cli
