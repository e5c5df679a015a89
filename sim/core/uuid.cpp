#include "uuid.hpp"

namespace gpumem::sim {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<UuidBytes> parse_uuid_bytes(std::string_view text) {
  if (text.starts_with("GPU-") || text.starts_with("MIG-")) text.remove_prefix(4);
  UuidBytes bytes{};
  std::size_t digits = 0;
  for (char c : text) {
    if (c == '-') continue;
    const int value = hex_value(c);
    if (value < 0 || digits >= 32) return std::nullopt;
    bytes[digits / 2] =
        static_cast<unsigned char>(bytes[digits / 2] | (digits % 2 == 0 ? value << 4 : value));
    ++digits;
  }
  if (digits != 32) return std::nullopt;
  return bytes;
}

}  // namespace gpumem::sim
