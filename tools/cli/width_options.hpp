// `--wide` and `--width N` for the commands that print tables (`list`, `watch`, `attribution`,
// `run`'s summary), and the table options they give for stdout.
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
// The width the flags ask for output on `fd`: none for --wide, N for --width N, else the
// terminal's (output_width).
std::optional<std::size_t> chosen_width(const WidthFlags& flags, int fd);

}  // namespace gpumem::cli
