// The library's record of why things fell back: each distinct message kept once, oldest first,
// and read back through gpumem/diagnostics.hpp. Every room may record; the log depends on
// nothing else in gpumem, so the lowest layers (driver loading, device identity) can use it.
#pragma once

#include <string>

namespace gpumem::support {

// Records `message` unless the same text was recorded before; empty messages are ignored.
// Thread-safe; out of memory, the message is dropped rather than thrown. Cheap to call
// repeatedly with the same message.
void record_diagnostic(const std::string& message);

}  // namespace gpumem::support
