// What the output can show: its width in columns, Unicode or ASCII, colour or none.
#pragma once

#include <cstddef>
#include <optional>

namespace gpumem::cli {

struct TextStyle {
  bool unicode = false;  // the locale's character set is UTF-8: block characters and "…"
  bool colour = false;   // SGR colour sequences
};

// The width `list` and `watch` fit their tables to when the user gave none: the terminal's
// (TIOCGWINSZ on `fd`), else a positive $COLUMNS, else 80 on a terminal whose size is unknown;
// nothing (no limit: the whole table, like `ps` into a pipe) when `fd` is not a terminal and
// $COLUMNS is unset.
std::optional<std::size_t> output_width(int fd);

// Unicode when the locale (LC_ALL, LC_CTYPE, LANG) uses UTF-8; colour only when `fd` is a
// terminal, $NO_COLOR is unset or empty (no-color.org) and $TERM is not "dumb".
TextStyle output_style(int fd);

}  // namespace gpumem::cli
