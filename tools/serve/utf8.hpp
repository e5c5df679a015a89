// Text from outside (process names, published scopes, device names) made valid UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace gpumem::serve {

// `text` with every byte that does not start a well-formed UTF-8 sequence (a stray continuation
// byte, a truncated, overlong or surrogate sequence, anything above U+10FFFF) replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace gpumem::serve
