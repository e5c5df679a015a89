// `--wide` and `--width N` for the commands that print tables (`list`, `watch`), and the table
// options they give for stdout.
#pragma once

#include <cstddef>

#include "snapshot_view.hpp"

namespace CLI {
class App;
}

namespace gpumem::cli {

struct WidthFlags {
  bool wide = false;
  std::size_t width = 0;  // 0: the terminal's (output_width)
};

void add_width_options(CLI::App& command, WidthFlags& flags);

// Read again at each call: a terminal can be resized while `watch` runs.
TableOptions stdout_table_options(const WidthFlags& flags);

}  // namespace gpumem::cli
