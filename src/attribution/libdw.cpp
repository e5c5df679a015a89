#include "attribution/libdw.hpp"

#include <dlfcn.h>

#include "gpumem/internal/diagnostics_log.hpp"
#include "gpumem/internal/environment.hpp"

namespace gpumem::attribution {
namespace {

template <class Function>
bool resolve(void* library, const char* name, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(::dlsym(library, name));
  if (function == nullptr && missing.empty()) missing = name;
  return function != nullptr;
}

const Libdw* load() noexcept {
  const char* chosen = support::env_value("GPUMEM_LIBDW_LIBRARY");
  const char* file = chosen != nullptr ? chosen : "libdw.so.1";
  void* library = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
  try {
    if (library == nullptr) {
      const char* error = ::dlerror();
      support::record_diagnostic(std::string("symbolizing without elfutils' libdw (no files or "
                                             "lines in allocation stacks): ") +
                                 (error != nullptr ? error : file));
      return nullptr;
    }
    static Libdw functions;
    std::string missing;
    resolve(library, "dwfl_begin", functions.begin, missing);
    resolve(library, "dwfl_end", functions.end, missing);
    resolve(library, "dwfl_report_begin", functions.report_begin, missing);
    resolve(library, "dwfl_report_end", functions.report_end, missing);
    resolve(library, "dwfl_linux_proc_report", functions.linux_proc_report, missing);
    resolve(library, "dwfl_linux_proc_find_elf", functions.linux_proc_find_elf, missing);
    resolve(library, "dwfl_standard_find_debuginfo", functions.standard_find_debuginfo, missing);
    resolve(library, "dwfl_addrmodule", functions.addrmodule, missing);
    resolve(library, "dwfl_module_info", functions.module_info, missing);
    resolve(library, "dwfl_module_addrname", functions.module_addrname, missing);
    resolve(library, "dwfl_module_getsrc", functions.module_getsrc, missing);
    resolve(library, "dwfl_lineinfo", functions.lineinfo, missing);
    if (!missing.empty()) {
      support::record_diagnostic("symbolizing without elfutils' libdw: " + std::string(file) +
                                 " has no " + missing);
      return nullptr;  // never unloaded: harmless
    }
    return &functions;
  } catch (...) {  // out of host memory for the diagnostic
    return nullptr;
  }
}

}  // namespace

const Libdw* libdw() noexcept {
  static const Libdw* const loaded = load();
  return loaded;
}

}  // namespace gpumem::attribution
