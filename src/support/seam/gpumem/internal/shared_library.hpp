// A run-time loaded shared library. NVIDIA's libraries (the driver room) are opened with dlopen
// so gpumem builds and runs on machines without them, and so are the symbolizer's and the
// unwinder's (elfutils' libdw, libunwind: the attribution room), so that no process pays for
// them at start-up; GPUMEM_*_LIBRARY variables name a file to load instead.
#pragma once

#include <initializer_list>
#include <string>

namespace gpumem::support {

class SharedLibrary {
 public:
  // Opens the file named by `override_variable` if it is set (a path that does not load means:
  // unavailable, with no fallback; an empty value counts as unset), otherwise the first of `names`
  // that loads.
  static SharedLibrary open(const char* override_variable,
                            std::initializer_list<const char*> names);

  // The first of `names` that this process has loaded already (dlopen RTLD_NOLOAD): what the
  // program itself uses, so that gpumem never brings in a second copy.
  static SharedLibrary find_loaded(std::initializer_list<const char*> names);

  SharedLibrary() = default;
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // Never dlcloses: callbacks into the library may still be in flight at process exit.
  ~SharedLibrary() = default;

  bool loaded() const noexcept { return handle_ != nullptr; }
  const std::string& path() const noexcept { return path_; }
  const std::string& error() const noexcept { return error_; }

  // nullptr when absent.
  void* symbol(const char* name) const noexcept;
  template <class Fn>
  Fn function(const char* name) const noexcept {
    return reinterpret_cast<Fn>(symbol(name));
  }
  // The first of several names that resolves (newest version first).
  template <class Fn>
  Fn function(std::initializer_list<const char*> names) const noexcept {
    for (const char* name : names) {
      if (void* found = symbol(name)) return reinterpret_cast<Fn>(found);
    }
    return nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string error_;
};

}  // namespace gpumem::support
