#include "inject_library.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "gpumem/internal/procfs.hpp"

#ifndef GPUMEM_INJECT_DIR_FROM_BIN
#define GPUMEM_INJECT_DIR_FROM_BIN "../lib"  // set by tools/cli/CMakeLists.txt from GNUInstallDirs
#endif

namespace gpumem::cli {

std::string find_inject_library(std::string* error) {
  namespace fs = std::filesystem;
  constexpr const char* kName = "libgpumem_inject.so";
  if (const char* chosen = std::getenv(kInjectLibraryVariable); chosen != nullptr && *chosen) {
    std::error_code ignored;
    if (::access(chosen, R_OK) == 0) return fs::absolute(chosen, ignored).string();
    if (error != nullptr)
      *error = std::string(kInjectLibraryVariable) + "=" + chosen + " cannot be read";
    return {};
  }
  if (const std::optional<fs::path> executable = procfs::executable("/proc", "self")) {
    const fs::path folder = executable->parent_path();
    // Where it is installed (CMake's library folder, relative to bin/), the build tree's lib/,
    // and the executable's own folder.
    for (const fs::path& candidate : {folder / GPUMEM_INJECT_DIR_FROM_BIN / kName,
                                      folder / ".." / "lib" / kName, folder / kName}) {
      if (::access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
  }
  if (error != nullptr) {
    *error = std::string(kName) + " not found next to gpumem (set " + kInjectLibraryVariable + ")";
  }
  return {};
}

}  // namespace gpumem::cli
