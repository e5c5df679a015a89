// The gpumem command's outputs follow the library's one rule for what gpumem writes to
// (gpumem/internal/output_file.hpp: `-` or a regular file, new or replaced atomically, never
// through a link or into a special file; two outputs naming one file refused before anything
// runs); these are its names in the command's namespace.
#pragma once

#include "gpumem/internal/output_file.hpp"

namespace gpumem::cli {

using detail::check_outputs;
using detail::check_writable;
using detail::kStdoutPath;
using detail::OutputRequest;
using detail::write_output;

}  // namespace gpumem::cli
