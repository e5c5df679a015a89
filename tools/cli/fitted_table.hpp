// A table that fits a terminal's width: columns are shortened or dropped in an order the caller
// gives, text columns cut to a minimum, and a flexible column (the bars) takes what is left.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpumem::cli {

struct FitColumn {
  // As for Table: a header starting with '>' is right-aligned.
  std::string header;
  // The full text, one per row.
  std::vector<std::string> cells;
  // A shorter form of each cell (empty: none), used once a `shorten` step is reached.
  std::vector<std::string> short_cells;
  // When non-zero, cells may be cut to this many columns (an ellipsis marks the cut) once every
  // step has been taken and the table is still too wide.
  std::size_t truncate_to = 0;
  // A flexible column: `draw(row, width)` renders a cell `width` columns wide, for a width from
  // `min_width` to `max_width` (`wide_width` without a limit). It takes the width the others
  // leave, and is dropped only as the very last resort.
  std::function<std::string(std::size_t row, std::size_t width)> draw;
  std::size_t min_width = 0;
  std::size_t max_width = 0;
  std::size_t wide_width = 0;
};

struct FitStep {
  enum Kind { shorten, drop } kind;
  std::size_t column;
};

struct FitLayout {
  std::vector<FitColumn> columns;
  // Taken in order, as many as needed, until the table fits.
  std::vector<FitStep> steps;
};

// The shortest prefixes of at least `length` characters that still tell the texts apart (UUIDs
// as a narrow table shows them: CUDA_VISIBLE_DEVICES takes such a prefix too).
std::vector<std::string> unique_prefixes(const std::vector<std::string>& texts, std::size_t length);

// A device's name without the "NVIDIA " every NVIDIA device's name starts with.
std::string without_vendor(const std::string& name);

// The rendered table: without a width every column in full (flexible ones at `wide_width`);
// with one, each line fits in `width` columns when the columns that have no step fit at their
// shortest, and otherwise is as narrow as they allow.
std::string fit_table(const FitLayout& layout, std::optional<std::size_t> width,
                      const std::string& ellipsis);

}  // namespace gpumem::cli
