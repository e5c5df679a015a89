// Parsing one HTTP/1.x request head (request line and headers, up to the blank line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::serve {

struct HttpRequest {
  int error_status = 0;    // 0 when the request is acceptable, else the status to answer
  bool head_only = false;  // HEAD: headers without the body
  bool keep_alive = false;
  std::string path;  // the target without its query
};

// Where the head ends (the index just past its blank line), or npos while it is incomplete.
std::size_t find_head_end(std::string_view buffer);

HttpRequest parse_request_head(std::string_view head);

}  // namespace gpumem::serve
