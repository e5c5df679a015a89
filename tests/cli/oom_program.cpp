// A program that runs out of memory on the simulated GPU, from functions whose names its
// attribution must show: load_weights holds the most (1 GiB + 512 MiB), warm_up briefly holds
// 64 MiB, then allocate_activations asks for more than the device has and gets
// CUDA_ERROR_OUT_OF_MEMORY. It frees nothing before the failure and exits 1 after it.
//
//   gpumem_oom_program [--hold-ms MS]
//
// --hold-ms keeps its memory MS milliseconds after the failure before it exits, so that the
// monitor of `gpumem run` surely samples it at rest (docs/cli.md's example shows the context
// that a sample reconciles; without the hold, whether one falls in the few milliseconds the
// program runs is chance).
#include <dlfcn.h>
#include <time.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;
constexpr CUresult kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
constexpr std::size_t kMiB = std::size_t{1} << 20;

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*free)(CUdeviceptr) = nullptr;
};

}  // namespace

template <class Fn>
void need(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(library, name));
  if (fn == nullptr) {
    std::fprintf(stderr, "oom_program: %s missing\n", name);
    std::exit(3);
  }
}

[[gnu::noinline]] void load_weights(const Driver& cuda) {
  CUdeviceptr weights = 0;
  CUdeviceptr embeddings = 0;
  if (cuda.alloc(&weights, 1024 * kMiB) != 0 || cuda.alloc(&embeddings, 512 * kMiB) != 0) {
    std::exit(4);
  }
}

[[gnu::noinline]] void warm_up(const Driver& cuda) {
  CUdeviceptr scratch = 0;
  if (cuda.alloc(&scratch, 64 * kMiB) != 0) std::exit(4);
  cuda.free(scratch);
}

[[gnu::noinline]] CUresult allocate_activations(const Driver& cuda) {
  CUdeviceptr activations = 0;
  return cuda.alloc(&activations, std::size_t{1} << 40);  // 1 TiB: more than any simulated GPU
}

int main(int argc, char** argv) {
  long hold_ms = 0;
  if (argc == 3 && std::strcmp(argv[1], "--hold-ms") == 0) {
    hold_ms = std::strtol(argv[2], nullptr, 10);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: gpumem_oom_program [--hold-ms MS]\n");
    return 2;
  }
  const char* path = std::getenv("GPUMEM_CUDA_LIBRARY");
  void* library = ::dlopen(path != nullptr ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return 3;
  Driver cuda;
  need(library, "cuInit", cuda.init);
  need(library, "cuDeviceGet", cuda.device_get);
  need(library, "cuDevicePrimaryCtxRetain", cuda.retain);
  need(library, "cuCtxSetCurrent", cuda.set_current);
  need(library, "cuMemAlloc_v2", cuda.alloc);
  need(library, "cuMemFree_v2", cuda.free);
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuda.init(0) != 0 || cuda.device_get(&device, 0) != 0 || cuda.retain(&context, device) != 0 ||
      cuda.set_current(context) != 0) {
    return 3;
  }
  load_weights(cuda);
  warm_up(cuda);
  const CUresult status = allocate_activations(cuda);
  std::printf("allocate_activations: %s\n",
              status == kOutOfMemory ? "CUDA_ERROR_OUT_OF_MEMORY" : "unexpected");
  std::fflush(stdout);
  if (hold_ms > 0) {
    const timespec hold{hold_ms / 1000, (hold_ms % 1000) * 1000000};
    ::nanosleep(&hold, nullptr);
  }
  return status == kOutOfMemory ? 1 : 5;
}
