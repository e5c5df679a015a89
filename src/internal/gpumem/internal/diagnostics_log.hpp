// The library's record of why things fell back: each distinct message kept once (see
// gpumem/diagnostics.hpp). Cheap to call repeatedly with the same message. The Python package
// records its own diagnostics beside the core's through it.
#pragma once

#include <string>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

void record_diagnostic(const std::string& message);

}  // namespace gpumem::detail

#pragma GCC visibility pop
