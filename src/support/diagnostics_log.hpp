// The library's record of why things fell back: each distinct message kept once, oldest first,
// and read back through gpumem/diagnostics.hpp. Every room may record; the log depends on
// nothing else in gpumem, so the lowest layers (driver loading, device identity) can use it.
// Declared in the tools' seams (gpumem/internal/diagnostics_log.hpp), so that the Python
// extension records into the same log.
#pragma once

#include "gpumem/internal/diagnostics_log.hpp"
