#include "attribution/libdw.hpp"

#include "gpumem/internal/diagnostics_log.hpp"
#include "gpumem/internal/shared_library.hpp"

namespace gpumem::attribution {
namespace {

template <class Function>
void resolve(const support::SharedLibrary& library, const char* name, Function& function,
             std::string& missing) {
  function = library.function<Function>(name);
  if (function == nullptr && missing.empty()) missing = name;
}

const Libdw* load() noexcept {
  try {
    // Never closed (SharedLibrary does not dlclose): harmless.
    static const support::SharedLibrary library =
        support::SharedLibrary::open("GPUMEM_LIBDW_LIBRARY", {"libdw.so.1"});
    if (!library.loaded()) {
      support::record_diagnostic(
          "symbolizing without elfutils' libdw (no files or lines in allocation stacks): " +
          library.error());
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
    resolve(library, "dwfl_module_nextcu", functions.module_nextcu, missing);
    resolve(library, "dwarf_haspc", functions.haspc, missing);
    resolve(library, "dwarf_getsrc_die", functions.getsrc_die, missing);
    resolve(library, "dwarf_linesrc", functions.linesrc, missing);
    resolve(library, "dwarf_lineno", functions.lineno, missing);
    if (!missing.empty()) {
      support::record_diagnostic("symbolizing without elfutils' libdw: " + library.path() +
                                 " has no " + missing);
      return nullptr;
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
