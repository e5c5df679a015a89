// Text made safe for XML and HTML: function names and paths come from the program measured and
// may hold anything.
#pragma once

#include <string>
#include <string_view>

namespace gpumem::cli::attribution {

// `text` escaped for XML character data and quoted attributes: & < > " ' as entities; control
// characters, U+FFFE/U+FFFF and bytes that are not UTF-8 (none of which XML 1.0 allows) as
// U+FFFD.
std::string escape_markup(std::string_view text);

}  // namespace gpumem::cli::attribution
