#include "attribution/symbolize.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "attribution/libdw.hpp"

namespace gpumem::attribution {
namespace {

std::optional<std::string> demangle(const char* name) {
  if (name == nullptr) return std::nullopt;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  if (status == 0 && demangled) return std::string(demangled.get());
  return std::string(name);
}

// Without libdw: the object holding the address and the exported function it lies in, as the
// dynamic loader knows them (no files, no lines, no static functions: the nearest exported
// symbol before an address is named only if the address is inside it).
NativeFrame resolve_with_loader(std::uintptr_t return_address) {
  NativeFrame frame;
  frame.address = return_address;
  Dl_info info{};
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  const std::uintptr_t pc = return_address > 0 ? return_address - 1 : 0;
  if (::dladdr1(reinterpret_cast<void*>(pc), &info, &entry, RTLD_DL_SYMENT) == 0) {
    return frame;
  }
  if (info.dli_fname != nullptr && *info.dli_fname != '\0') frame.module = info.dli_fname;
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  const auto start = reinterpret_cast<std::uintptr_t>(info.dli_saddr);
  if (info.dli_sname != nullptr && symbol != nullptr && pc >= start &&
      pc < start + symbol->st_size) {
    frame.function = demangle(info.dli_sname);
  }
  return frame;
}

class Session {
 public:
  explicit Session(const Libdw& dw) : dw_(dw) {
    callbacks_.find_elf = dw_.linux_proc_find_elf;
    callbacks_.find_debuginfo = dw_.standard_find_debuginfo;
    callbacks_.debuginfo_path = nullptr;
  }
  ~Session() { close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  NativeFrame resolve(std::uintptr_t return_address) {
    NativeFrame frame;
    frame.address = return_address;
    const Dwarf_Addr pc = return_address > 0 ? return_address - 1 : 0;
    Dwfl_Module* module = find(pc);
    if (module == nullptr) return frame;
    // The module's name is the path the process mapped it from.
    if (const char* path = dw_.module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           nullptr, nullptr)) {
      frame.module = path;
    }
    frame.function = demangle(dw_.module_addrname(module, pc));
    if (Dwfl_Line* line = dw_.module_getsrc(module, pc)) {
      int number = 0;
      if (const char* file = dw_.lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
        frame.file = file;
        frame.line = number;
      }
    } else {
      line_by_units(module, pc, frame);
    }
    return frame;
  }

 private:
  // The line of `pc` found unit by unit: a module without .debug_aranges (clang writes none;
  // elfutils before 0.189 finds no unit for its addresses without one) still names its lines.
  void line_by_units(Dwfl_Module* module, Dwarf_Addr pc, NativeFrame& frame) {
    Dwarf_Addr bias = 0;
    for (Dwarf_Die* unit = dw_.module_nextcu(module, nullptr, &bias); unit != nullptr;
         unit = dw_.module_nextcu(module, unit, &bias)) {
      if (dw_.haspc(unit, pc - bias) != 1) continue;
      Dwarf_Line* line = dw_.getsrc_die(unit, pc - bias);
      int number = 0;
      const char* file = line != nullptr ? dw_.linesrc(line, nullptr, nullptr) : nullptr;
      if (file != nullptr && dw_.lineno(line, &number) == 0) {
        frame.file = file;
        frame.line = number;
      }
      return;
    }
  }

  // The module of an address; the process's mappings are re-read once when it is new (a library
  // loaded since).
  Dwfl_Module* find(Dwarf_Addr pc) {
    if (dwfl_ == nullptr && !open()) return nullptr;
    if (Dwfl_Module* module = dw_.addrmodule(dwfl_, pc)) return module;
    close();
    if (!open()) return nullptr;
    return dw_.addrmodule(dwfl_, pc);
  }
  bool open() {
    dwfl_ = dw_.begin(&callbacks_);
    if (dwfl_ == nullptr) return false;
    dw_.report_begin(dwfl_);
    const int reported = dw_.linux_proc_report(dwfl_, ::getpid());
    dw_.report_end(dwfl_, nullptr, nullptr);
    if (reported != 0) {
      close();
      return false;
    }
    return true;
  }
  void close() {
    if (dwfl_ != nullptr) dw_.end(dwfl_);
    dwfl_ = nullptr;
  }

  const Libdw& dw_;
  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
};

struct Cache {
  std::mutex mutex;
  std::unique_ptr<Session> session;  // none without libdw
  std::unordered_map<std::uintptr_t, NativeFrame> frames;
};

Cache& cache() {
  static Cache* const instance = [] {
    auto* made = new Cache;
    if (const Libdw* dw = libdw()) made->session = std::make_unique<Session>(*dw);
    return made;
  }();
  return *instance;
}

NativeFrame lookup(Cache& c, std::uintptr_t address) {
  const auto found = c.frames.find(address);
  if (found != c.frames.end()) return found->second;
  NativeFrame frame = c.session ? c.session->resolve(address) : resolve_with_loader(address);
  c.frames.emplace(address, frame);
  return frame;
}

std::string_view basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

NativeFrame symbolize(std::uintptr_t return_address) {
  Cache& c = cache();
  const std::lock_guard lock(c.mutex);
  return lookup(c, return_address);
}

std::vector<NativeFrame> symbolize(const std::vector<std::uintptr_t>& return_addresses) {
  Cache& c = cache();
  const std::lock_guard lock(c.mutex);
  std::vector<NativeFrame> frames;
  frames.reserve(return_addresses.size());
  for (const std::uintptr_t address : return_addresses) frames.push_back(lookup(c, address));
  return frames;
}

bool is_tooling_frame(const NativeFrame& frame) {
  if (frame.module) {
    const std::string_view name = basename(*frame.module);
    for (const std::string_view library :
         {"libcuda.", "libcupti.", "libcudart.", "libnvidia-", "libgpumem"}) {
      if (starts_with(name, library)) return true;
    }
  }
  // gpumem linked statically: its functions by namespace.
  return frame.function && starts_with(*frame.function, "gpumem::");
}

bool is_interpreter_frame(const NativeFrame& frame) {
  if (frame.function &&
      (starts_with(*frame.function, "_PyEval_") || starts_with(*frame.function, "PyEval_"))) {
    return true;
  }
  // The executable (python3.11) or libpython.
  return frame.module && (starts_with(basename(*frame.module), "libpython") ||
                          starts_with(basename(*frame.module), "python"));
}

void forget_symbols() {
  Cache& c = cache();
  const std::lock_guard lock(c.mutex);
  c.frames.clear();
}

}  // namespace gpumem::attribution
