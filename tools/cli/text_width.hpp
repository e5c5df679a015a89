// How many terminal columns text takes, and cutting text to a number of columns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpumem/internal/printable_text.hpp"

namespace gpumem::cli {

// The columns UTF-8 `text` takes on a terminal: each character its Unicode width (East Asian
// wide characters two, combining marks none, libunistring's uc_width), SGR and other CSI escape
// sequences (ESC '[' ... final byte) none. Invalid bytes count one column each.
std::size_t display_width(std::string_view text);

// `text` cut to at most `width` columns; when something was cut, it ends with `ellipsis`
// (which fits in the width). Text without escape sequences only.
std::string truncate_to_width(std::string_view text, std::size_t width, std::string_view ellipsis);

// `text` safe to print on a terminal or in CSV: the library's one function
// (gpumem/internal/printable_text.hpp: control, bidirectional and invisible characters and bytes
// that are not UTF-8 shown as escapes such as \x1b and \u202e).
using detail::printable;

// `line` (no newline in it) wrapped to `width` columns, each line ended by a newline: words
// (split at spaces) fill each line; the lines after the first start with `indent`; a word wider
// than a line is broken between characters, never cut.
std::string wrap_line(const std::string& line, std::size_t width, const std::string& indent);

}  // namespace gpumem::cli
