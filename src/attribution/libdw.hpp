// elfutils' libdw, loaded on first use (dlopen, RTLD_LOCAL): only symbolizing a snapshot needs it,
// so a process that loads gpumem (every CUDA process under `gpumem run`, every `import gpumem`)
// does not map it and its four libraries (libelf, libz, liblzma, libbz2) at start-up, and gpumem
// works where it is not installed (frames then name their module and nearest symbol only).
// GPUMEM_LIBDW_LIBRARY names another file.
#pragma once

#include <elfutils/libdwfl.h>

#include <string>

namespace gpumem::attribution {

struct Libdw {
  decltype(&::dwfl_begin) begin;
  decltype(&::dwfl_end) end;
  decltype(&::dwfl_report_begin) report_begin;
  decltype(&::dwfl_report_end) report_end;
  decltype(&::dwfl_linux_proc_report) linux_proc_report;
  decltype(&::dwfl_linux_proc_find_elf) linux_proc_find_elf;
  decltype(&::dwfl_standard_find_debuginfo) standard_find_debuginfo;
  decltype(&::dwfl_addrmodule) addrmodule;
  decltype(&::dwfl_module_info) module_info;
  decltype(&::dwfl_module_addrname) module_addrname;
  decltype(&::dwfl_module_getsrc) module_getsrc;
  decltype(&::dwfl_lineinfo) lineinfo;
  // A compilation unit's lines, for a module without an address index (.debug_aranges, which
  // clang does not write): dwfl_module_getsrc finds no unit for any address of one.
  decltype(&::dwfl_module_nextcu) module_nextcu;
  decltype(&::dwarf_haspc) haspc;
  decltype(&::dwarf_getsrc_die) getsrc_die;
  decltype(&::dwarf_linesrc) linesrc;
  decltype(&::dwarf_lineno) lineno;
};

// The library's functions, loaded once; nullptr when it cannot be loaded or lacks one of them
// (the reason, once, in the diagnostics log: gpumem::diagnostics()).
const Libdw* libdw() noexcept;

}  // namespace gpumem::attribution
