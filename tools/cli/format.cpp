#include "format.hpp"

#include <cstdio>

#include "gpumem/internal/byte_size.hpp"

namespace gpumem::cli {

std::string format_bytes(std::int64_t bytes) {
  return detail::byte_size_text(bytes);
}

std::string format_seconds(double seconds) {
  char text[64];
  if (seconds < 1.0) {
    std::snprintf(text, sizeof text, "%.0f ms", seconds * 1000.0);
  } else {
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  }
  return text;
}

std::string format_share(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

}  // namespace gpumem::cli
