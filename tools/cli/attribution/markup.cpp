#include "attribution/markup.hpp"

#include <unistr.h>

#include <cstdint>

namespace gpumem::cli::attribution {

std::string escape_markup(std::string_view text) {
  static constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  std::size_t at = 0;
  while (at < text.size()) {
    ucs4_t character = 0;
    const int length = u8_mbtoucr(&character, bytes + at, text.size() - at);
    if (length <= 0) {  // not UTF-8 (or cut short): one byte replaced
      out += kReplacement;
      ++at;
      continue;
    }
    const std::string_view piece = text.substr(at, static_cast<std::size_t>(length));
    at += static_cast<std::size_t>(length);
    switch (character) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&#39;";
        continue;
      default:
        break;
    }
    const bool allowed =
        (character >= 0x20 && character != 0x7F && character != 0xFFFE && character != 0xFFFF) ||
        character == '\t' || character == '\n';
    out += allowed ? piece : std::string_view(kReplacement);
  }
  return out;
}

}  // namespace gpumem::cli::attribution
