// Untrusted text (a process's, host's or device's name, a file's content, a command-line
// argument) as it may be shown on a terminal or written into CSV: the one function every view of
// the gpumem command and every error message that echoes input uses.
//
// Nothing of the text may act on the terminal or hide from the reader: control characters (C0,
// DEL, C1: ESC starts the sequences that set a title, move the cursor or write a hyperlink; BEL,
// CR), the bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C: they reorder
// what follows, so that "gpu0.txt" can read as "txt.0upg"), line and paragraph separators, and
// the other invisible characters (Unicode's format characters, category Cf, and its
// Default_Ignorable_Code_Point: zero-width spaces and joiners, the soft hyphen, variation
// selectors, tags, Hangul fillers) are each shown as an escape, and so is each byte that is not
// UTF-8:
//
//   \t \n \r           tab, line feed, carriage return
//   \xHH               another C0 control, DEL, or a byte that is not UTF-8 (\x1b, \x07, \xff)
//   \uXXXX             a hidden character up to U+FFFF (\u009b, \u202e, \u200b, \ufeff)
//   \UXXXXXXXX         a hidden character above it (\U000e0041)
//
// Everything else is kept as it is, a backslash included (an escape is told from the text it
// replaced by the name's other sources: JSON keeps the raw text). The result is UTF-8 with no
// character that moves the cursor or takes no column on its own.
#pragma once

#include <string>
#include <string_view>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

// `text` with every hidden character and every byte that is not UTF-8 shown as an escape (above).
std::string printable(std::string_view text);

// Whether printable() shows code point `c` as an escape (a control, bidirectional, format or
// invisible character, or a surrogate).
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) bool hidden_character(char32_t c) noexcept;

}  // namespace gpumem::detail

#pragma GCC visibility pop
