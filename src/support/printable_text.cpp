// Untrusted text made safe to show (gpumem/internal/printable_text.hpp): strict UTF-8 decoding
// and Unicode's hidden characters shown as escapes.
#include "gpumem/internal/printable_text.hpp"

#include <cstdint>
#include <cstdio>

namespace gpumem::detail {
namespace {

struct Range {
  char32_t first;
  char32_t last;
};

// Unicode's format characters (General_Category Cf), Default_Ignorable_Code_Point (which holds
// the unassigned code points reserved for more of them, so that a later Unicode's are hidden
// too), and the line and paragraph separators (Zl, Zp), from the Unicode Character Database
// (UnicodeData.txt, DerivedCoreProperties.txt). tests/support checks the table against
// libunistring's tables of the same properties. Sorted, not overlapping.
constexpr Range kHidden[] = {
    {0x00AD, 0x00AD},    // soft hyphen
    {0x034F, 0x034F},    // combining grapheme joiner
    {0x0600, 0x0605},    // Arabic number signs (prepended concatenation marks)
    {0x061C, 0x061C},    // Arabic letter mark (bidi)
    {0x06DD, 0x06DD},    // Arabic end of ayah
    {0x070F, 0x070F},    // Syriac abbreviation mark
    {0x0890, 0x0891},    // Arabic pound and piastre marks above
    {0x08E2, 0x08E2},    // Arabic disputed end of ayah
    {0x115F, 0x1160},    // Hangul choseong and jungseong fillers
    {0x17B4, 0x17B5},    // Khmer inherent vowels
    {0x180B, 0x180F},    // Mongolian free variation selectors, vowel separator
    {0x200B, 0x200F},    // zero-width space, non-joiner, joiner; LRM, RLM
    {0x2028, 0x202E},    // line and paragraph separators; LRE, RLE, PDF, LRO, RLO
    {0x2060, 0x206F},    // word joiner, invisible operators, LRI RLI FSI PDI, deprecated
    {0x3164, 0x3164},    // Hangul filler
    {0xFE00, 0xFE0F},    // variation selectors
    {0xFEFF, 0xFEFF},    // zero-width no-break space (byte order mark)
    {0xFFA0, 0xFFA0},    // halfwidth Hangul filler
    {0xFFF0, 0xFFFB},    // reserved; interlinear annotation anchors
    {0x110BD, 0x110BD},  // Kaithi number sign
    {0x110CD, 0x110CD},  // Kaithi number sign above
    {0x13430, 0x1343F},  // Egyptian hieroglyph format controls
    {0x1BCA0, 0x1BCA3},  // shorthand format controls
    {0x1D173, 0x1D17A},  // musical symbol format controls
    {0xE0000, 0xE0FFF},  // tags, variation selectors supplement, reserved
};

// The code point at the start of `text` and its length in bytes, by UTF-8's rules (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); length 0 for a byte that starts none.
struct Decoded {
  char32_t c = 0;
  std::size_t length = 0;
};

Decoded decode(std::string_view text) {
  const auto byte = [&](std::size_t at) { return static_cast<std::uint8_t>(text[at]); };
  const std::uint8_t lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  char32_t c = 0;
  char32_t low = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, c = lead & 0x1F, low = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, c = lead & 0x0F, low = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, c = lead & 0x07, low = 0x10000;
  } else {
    return {};
  }
  if (text.size() < length) return {};
  for (std::size_t at = 1; at < length; ++at) {
    if ((byte(at) & 0xC0) != 0x80) return {};
    c = (c << 6) | (byte(at) & 0x3F);
  }
  if (c < low || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return {};
  return {c, length};
}

void append_escape(std::string& out, char prefix, unsigned value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "\\%c%0*x", prefix, digits, value);
  out += text;
}

}  // namespace

bool hidden_character(char32_t c) noexcept {
  if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return true;  // C0, DEL, C1
  if (c < 0xAD) return false;
  if (c >= 0xD800 && c <= 0xDFFF) return true;  // surrogates: never text
  for (const Range& range : kHidden) {
    if (c < range.first) return false;
    if (c <= range.last) return true;
  }
  return false;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const Decoded decoded = decode(text);
    if (decoded.length == 0) {
      append_escape(out, 'x', static_cast<std::uint8_t>(text[0]), 2);
      text.remove_prefix(1);
      continue;
    }
    const char32_t c = decoded.c;
    if (!hidden_character(c)) {
      out.append(text.substr(0, decoded.length));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x80) {
      append_escape(out, 'x', static_cast<unsigned>(c), 2);
    } else if (c <= 0xFFFF) {
      append_escape(out, 'u', static_cast<unsigned>(c), 4);
    } else {
      append_escape(out, 'U', static_cast<unsigned>(c), 8);
    }
    text.remove_prefix(decoded.length);
  }
  return out;
}

}  // namespace gpumem::detail
