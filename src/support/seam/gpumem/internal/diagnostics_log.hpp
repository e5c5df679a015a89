// The library's record of why things fell back (src/support/diagnostics_log.hpp), declared where
// the tools can reach it too: the Python package records its own diagnostics beside the core's.
#pragma once

#include <string>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::support {

// Records `message` unless the same text was recorded before; empty messages are ignored.
// Thread-safe; out of memory, the message is dropped rather than thrown. Cheap to call
// repeatedly with the same message.
void record_diagnostic(const std::string& message);

}  // namespace gpumem::support

#pragma GCC visibility pop
