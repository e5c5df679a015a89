// Direct access to the simulated libraries from a test: dlopen by path and typed symbols. Each
// test runs in its own process, so the libraries see the SimGpu environment set just before.
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "support/sim_gpu.hpp"

namespace gpumem::testing {

class SimLibrary {
 public:
  explicit SimLibrary(const std::string& file)
      : handle_(::dlopen(sim_path(file).c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr)
      throw std::runtime_error(std::string("cannot load ") + file + ": " + ::dlerror());
  }
  template <class Fn>
  Fn get(const char* name) const {
    auto fn = reinterpret_cast<Fn>(::dlsym(handle_, name));
    if (fn == nullptr) throw std::runtime_error(std::string("missing symbol ") + name);
    return fn;
  }
  bool has(const char* name) const { return ::dlsym(handle_, name) != nullptr; }

 private:
  void* handle_;  // never closed: the libraries are meant to stay loaded
};

}  // namespace gpumem::testing
