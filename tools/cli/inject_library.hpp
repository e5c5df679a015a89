// Where `gpumem run` finds libgpumem_inject.so: GPUMEM_INJECT_LIBRARY, else next to the gpumem
// executable (../lib, as installed and as built, or the same folder).
#pragma once

#include <string>

namespace gpumem::cli {

inline constexpr const char* kInjectLibraryVariable = "GPUMEM_INJECT_LIBRARY";

// The library's absolute path, or empty with the reason in `error`.
std::string find_inject_library(std::string* error);

}  // namespace gpumem::cli
