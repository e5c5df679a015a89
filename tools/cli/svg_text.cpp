#include "svg_text.hpp"

#include <cstdio>

#include "gpumem/internal/printable_text.hpp"

namespace gpumem::cli {

std::string svg_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : detail::printable(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;  // printable() left no control character and no byte that is not UTF-8
    }
  }
  return out;
}

std::string svg_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

SvgAxisUnit svg_axis_unit(double max_bytes) {
  if (max_bytes >= 2.0 * (1ull << 30)) return {"GiB", double(1ull << 30)};
  if (max_bytes >= 2.0 * (1ull << 20)) return {"MiB", double(1ull << 20)};
  if (max_bytes >= 2.0 * (1ull << 10)) return {"KiB", double(1ull << 10)};
  return {"B", 1.0};
}

}  // namespace gpumem::cli
