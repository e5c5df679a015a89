// A device's memory as a bar, as nvitop and gpustat draw it: `[█████▍░░░      ]  38%`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "terminal.hpp"

namespace gpumem::cli {

struct BarValues {
  std::uint64_t used = 0;
  std::uint64_t total = 0;
  std::optional<std::uint64_t> peak;  // `watch`: the highest used since it began
};

// The columns a bar of `cells` cells takes with its brackets and percentage.
constexpr std::size_t bar_width(std::size_t cells) {
  return cells + 7;  // "[" cells "]" " " "100%"
}

// `cells` cells between brackets, then the used share of the total in percent. Used is solid
// (in eighths of a cell with Unicode, whole '#' cells in ASCII), the peak beyond it shaded ('░',
// '='), the rest blank. Both round up, and the percentage too: the bar never shows less than
// the device holds (a single used byte shows). With colour, used is green below 70 %, yellow
// below 90 %, red above, and the peak dim. `?` when the total is unknown (zero).
std::string usage_bar(const BarValues& values, std::size_t cells, const TextStyle& style);

}  // namespace gpumem::cli
