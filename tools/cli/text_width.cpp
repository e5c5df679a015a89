#include "text_width.hpp"

#include <unistr.h>
#include <uniwidth.h>

#include <cstdint>

namespace gpumem::cli {
namespace {

// The length in bytes of the character or escape sequence at the start of `text`, and its width.
struct Piece {
  std::size_t bytes = 0;
  std::size_t width = 0;
};

Piece next_piece(std::string_view text) {
  if (text.size() >= 2 && text[0] == '\033' && text[1] == '[') {
    std::size_t end = 2;
    while (end < text.size() && !(text[end] >= 0x40 && text[end] <= 0x7e)) ++end;
    return {std::min(end + 1, text.size()), 0};
  }
  ucs4_t character = 0;
  const int length =
      u8_mbtouc(&character, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  const int width = uc_width(character, "UTF-8");
  // Invalid bytes (decoded as U+FFFD) take one column; control characters none.
  return {static_cast<std::size_t>(length > 0 ? length : 1),
          static_cast<std::size_t>(width > 0 ? width : 0)};
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  while (!text.empty()) {
    const Piece piece = next_piece(text);
    width += piece.width;
    text.remove_prefix(piece.bytes);
  }
  return width;
}

std::string truncate_to_width(std::string_view text, std::size_t width, std::string_view ellipsis) {
  if (display_width(text) <= width) return std::string(text);
  const std::size_t ellipsis_width = display_width(ellipsis);
  if (ellipsis_width > width) return {};
  std::string cut;
  std::size_t used = 0;
  while (!text.empty()) {
    const Piece piece = next_piece(text);
    if (used + piece.width > width - ellipsis_width) break;
    cut.append(text.substr(0, piece.bytes));
    used += piece.width;
    text.remove_prefix(piece.bytes);
  }
  return cut + std::string(ellipsis);
}

namespace {

// The UTF-8 character that starts at `text[at]` ends before the returned index.
std::size_t next_character(const std::string& text, std::size_t at) {
  std::size_t end = at + 1;
  while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
  return end;
}

}  // namespace

// One line wrapped: words (split at spaces) fill each line up to `width` columns; the lines
// after the first start with `indent`; a word wider than a line is broken between characters.
std::string wrap_line(const std::string& line, std::size_t width, const std::string& indent) {
  if (display_width(line) <= width) return line + "\n";
  std::string out, current;
  std::size_t current_width = 0;
  const std::size_t indent_width = display_width(indent);
  // Whether `current` holds no word yet (the first line, or a continuation's indent alone): told
  // by a flag, not by the width, which a line's first words can add up to as well.
  bool empty = true;
  auto finish = [&] {
    out += current + "\n";
    current = indent;
    current_width = indent_width;
    empty = true;
  };
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t space = line.find(' ', at);
    std::string word = line.substr(at, space == std::string::npos ? std::string::npos : space - at);
    at = space == std::string::npos ? line.size() : space + 1;
    const std::size_t word_width = display_width(word);
    if (!empty && current_width + 1 + word_width <= width) {
      current += " " + word;
      current_width += 1 + word_width;
      continue;
    }
    if (!empty) finish();
    // Break a word wider than what is left of a fresh line.
    while (current_width + display_width(word) > width && !word.empty()) {
      std::size_t cut = 0, cut_width = 0;
      while (cut < word.size()) {
        const std::size_t next = next_character(word, cut);
        const std::size_t w = display_width(std::string_view(word).substr(cut, next - cut));
        if (current_width + cut_width + w > width && cut > 0) break;
        cut_width += w;
        cut = next;
      }
      current += word.substr(0, cut);
      word = word.substr(cut);
      finish();
    }
    if (word.empty()) continue;  // it ended with the line
    current += word;
    current_width += display_width(word);
    empty = false;
  }
  if (!empty || out.empty()) out += current + "\n";
  return out;
}

}  // namespace gpumem::cli
