#pragma once

#include <string>

namespace gpumem::serve {

// The page at "/": what this is and where the metrics are.
const std::string& help_page();

}  // namespace gpumem::serve
