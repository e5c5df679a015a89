#include "listen_address.hpp"

#include <cctype>
#include <charconv>

namespace gpumem::serve {

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 address needs brackets
  }
  unsigned value = 0;
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || error != std::errc{} || end != port.data() + port.size() ||
      value > 65535) {
    return std::nullopt;
  }
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':' &&
        c != '%') {
      return std::nullopt;
    }
  }
  return ListenAddress{std::string(host), std::to_string(value)};
}

}  // namespace gpumem::serve
