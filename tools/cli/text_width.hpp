// How many terminal columns text takes, and cutting text to a number of columns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::cli {

// The columns UTF-8 `text` takes on a terminal: each character its Unicode width (East Asian
// wide characters two, combining marks none, libunistring's uc_width), SGR and other CSI escape
// sequences (ESC '[' ... final byte) none. Invalid bytes count one column each.
std::size_t display_width(std::string_view text);

// `text` cut to at most `width` columns; when something was cut, it ends with `ellipsis`
// (which fits in the width). Text without escape sequences only.
std::string truncate_to_width(std::string_view text, std::size_t width, std::string_view ellipsis);

// `text` safe to print on a terminal: control characters (C0, DEL, C1: an escape sequence in a
// process's name could otherwise drive the terminal of whoever lists it) and bytes that are not
// UTF-8 each become '?'.
std::string printable(std::string_view text);

// `line` (no newline in it) wrapped to `width` columns, each line ended by a newline: words
// (split at spaces) fill each line; the lines after the first start with `indent`; a word wider
// than a line is broken between characters, never cut.
std::string wrap_line(const std::string& line, std::size_t width, const std::string& indent);

}  // namespace gpumem::cli
