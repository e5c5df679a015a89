#include "injection.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace gpumem::sim::cuda {

void run_injection_once() {
  // Claimed before the call: an injection that calls cuInit itself must not recurse.
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "gpumem-sim: cannot load CUDA_INJECTION64_PATH: %s\n", ::dlerror());
    return;
  }
  using Initialize = int (*)();
  auto initialize = reinterpret_cast<Initialize>(::dlsym(library, "InitializeInjection"));
  if (initialize == nullptr) {
    std::fprintf(stderr, "gpumem-sim: %s has no InitializeInjection\n", path);
    return;
  }
  initialize();
}

}  // namespace gpumem::sim::cuda
