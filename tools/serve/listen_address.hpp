// Where the exporter listens: "127.0.0.1:9400", "[::1]:9400", "localhost:0", "0.0.0.0:9400".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpumem::serve {

struct ListenAddress {
  std::string host;  // without brackets
  std::string port;  // digits; "0" asks for an ephemeral port
};

std::optional<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace gpumem::serve
