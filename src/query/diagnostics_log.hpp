// The library's record of why things fell back: each distinct message kept once (see
// gpumem/diagnostics.hpp). Cheap to call repeatedly with the same message.
#pragma once

#include <string>

namespace gpumem::detail {

void record_diagnostic(const std::string& message);

}  // namespace gpumem::detail
