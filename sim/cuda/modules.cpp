// The simulated CUDA driver's modules: cuModuleLoad / cuModuleLoadData(Ex) / cuModuleUnload /
// cuModuleGetFunction / cuLaunchKernel, with the device memory a loaded module takes and CUPTI's
// MODULE_LOADED / MODULE_UNLOAD_STARTING resource callbacks.
//
// Model (a sim choice: NVIDIA documents no figure): a module's code and data take its image size
// rounded up to the device page (kPageBytes), on its context's device. With lazy loading
// (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2; read once, at the first module call) that
// memory is taken when a function of the module is first asked for (cuModuleGetFunction, or a
// launch); with CUDA_MODULE_LOADING=EAGER, at load. Unloading the module, or destroying its
// context, gives it back.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/export.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::traced;

struct gpumem::abi::CUfunc_st {
  CUmod_st* module;
  std::string name;
};

struct gpumem::abi::CUmod_st {
  CUcontext context;
  std::uint32_t id;
  std::vector<char> image;  // a copy, for the callbacks' pCubin
  std::uint64_t device_bytes;
  bool charged = false;
  bool live = true;
  std::map<std::string, CUfunc_st*> functions;
};

namespace gpumem::sim::cuda {
namespace {

struct Modules {
  std::mutex mutex;
  std::vector<CUmod_st*> all;  // never freed: a stale handle is recognised, not dereferenced wild
  std::uint32_t next_id = 1;
};
Modules& modules() {
  static Modules* m = new Modules;
  return *m;
}

bool lazy_loading() {
  static const bool lazy = [] {
    const char* mode = std::getenv("CUDA_MODULE_LOADING");
    return mode == nullptr || std::strcmp(mode, "EAGER") != 0;
  }();
  return lazy;
}

template <class T>
T read_at(const unsigned char* bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof value);
  return value;
}

// The size of an image passed by address: a 64-bit ELF (cubin) ends with its section or program
// header table, a fatbinary says its size in its header, anything else is NUL-terminated PTX.
std::size_t image_size(const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) == 0 &&
      bytes[4] == 2) {
    const auto sections =
        read_at<std::uint64_t>(bytes, 0x28) +
        std::uint64_t{read_at<std::uint16_t>(bytes, 0x3A)} * read_at<std::uint16_t>(bytes, 0x3C);
    const auto programs =
        read_at<std::uint64_t>(bytes, 0x20) +
        std::uint64_t{read_at<std::uint16_t>(bytes, 0x36)} * read_at<std::uint16_t>(bytes, 0x38);
    return std::max<std::uint64_t>({sections, programs, 64});
  }
  if (read_at<std::uint32_t>(bytes, 0) == 0xBA55ED50u) {  // fatBinaryHeader
    return read_at<std::uint16_t>(bytes, 6) + read_at<std::uint64_t>(bytes, 8);
  }
  return std::strlen(static_cast<const char*>(image)) + 1;
}

CUpti_ModuleResourceData descriptor(const CUmod_st& module) {
  return {module.id, module.image.size(), module.image.data()};
}

CUresult load(CUmodule* out, const char* image, std::size_t size) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned nvml = 0;
  if (const CUresult rc = current_device(&nvml)) return rc;
  auto* module = new CUmod_st;
  module->context = current_context();
  module->image.assign(image, image + size);
  module->device_bytes = round_up(size, kPageBytes);
  if (!lazy_loading()) {
    if (!state().charge(nvml, module->device_bytes)) {
      delete module;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    module->charged = true;
  }
  {
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    module->id = m.next_id++;
    m.all.push_back(module);
  }
  *out = module;
  CUpti_ModuleResourceData data = descriptor(*module);
  resource_event(CUPTI_CBID_RESOURCE_MODULE_LOADED, module->context, &data);
  return CUDA_SUCCESS;
}

bool live_module(CUmodule module) {
  Modules& m = modules();
  std::lock_guard lock(m.mutex);
  for (const CUmod_st* known : m.all) {
    if (known == module) return module->live;
  }
  return false;
}

// Lazy loading: the module's memory is taken when one of its functions is first needed.
CUresult materialise(CUmod_st& module) {
  Modules& m = modules();
  std::lock_guard lock(m.mutex);
  if (module.charged) return CUDA_SUCCESS;
  if (!state().charge(module.context->nvml_index, module.device_bytes))
    return CUDA_ERROR_OUT_OF_MEMORY;
  module.charged = true;
  return CUDA_SUCCESS;
}

// Fires MODULE_UNLOAD_STARTING and gives the module's memory back.
void unload(CUmod_st& module) {
  CUpti_ModuleResourceData data = descriptor(module);
  resource_event(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, module.context, &data);
  Modules& m = modules();
  std::lock_guard lock(m.mutex);
  if (module.charged) state().uncharge(module.context->nvml_index, module.device_bytes);
  module.charged = false;
  module.live = false;
}

}  // namespace

void unload_modules_of(CUcontext context) {
  std::vector<CUmod_st*> doomed;
  {
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    for (CUmod_st* module : m.all) {
      if (module->live && module->context == context) doomed.push_back(module);
    }
  }
  for (CUmod_st* module : doomed) unload(*module);
}

void modules_after_fork() {
  Modules& m = modules();
  for (CUmod_st* module : m.all) {
    if (module->live && module->charged)
      state().charge(module->context->nvml_index, module->device_bytes);
  }
}

}  // namespace gpumem::sim::cuda

GPUMEM_SIM_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* path) {
  const cuModuleLoad_params params{module, path};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleLoad, "cuModuleLoad", params, [&]() -> CUresult {
    if (module == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::ifstream file(path, std::ios::binary);
    if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
    const std::vector<char> image{std::istreambuf_iterator<char>(file),
                                  std::istreambuf_iterator<char>()};
    if (image.empty()) return CUDA_ERROR_INVALID_IMAGE;
    return cuda::load(module, image.data(), image.size());
  });
}

GPUMEM_SIM_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  const cuModuleLoadData_params params{module, image};
  return traced(
      CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, "cuModuleLoadData", params, [&]() -> CUresult {
        if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
        return cuda::load(module, static_cast<const char*>(image), cuda::image_size(image));
      });
}

GPUMEM_SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                              unsigned options_count, void* options,
                                              void** option_values) {
  const cuModuleLoadDataEx_params params{module, image, options_count, options, option_values};
  return traced(
      CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx, "cuModuleLoadDataEx", params, [&]() -> CUresult {
        if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
        return cuda::load(module, static_cast<const char*>(image), cuda::image_size(image));
      });
}

GPUMEM_SIM_EXPORT CUresult cuModuleUnload(CUmodule module) {
  const cuModuleUnload_params params{module};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, "cuModuleUnload", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (!cuda::live_module(module)) return CUDA_ERROR_INVALID_HANDLE;
                  cuda::unload(*module);
                  return CUDA_SUCCESS;
                });
}

// Any name is found (the simulator does not read the image's symbol table).
GPUMEM_SIM_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module,
                                               const char* name) {
  const cuModuleGetFunction_params params{function, module, name};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, "cuModuleGetFunction", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  if (!cuda::live_module(module)) return CUDA_ERROR_INVALID_HANDLE;
                  if (const CUresult rc = cuda::materialise(*module)) return rc;
                  std::lock_guard lock(cuda::modules().mutex);
                  CUfunc_st*& f = module->functions[name];
                  if (f == nullptr) f = new CUfunc_st{module, name};
                  *function = f;
                  return CUDA_SUCCESS;
                });
}

namespace {
struct cuLaunchKernel_params {
  CUfunction f;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};

CUresult launch(CUfunction function) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (function == nullptr || !cuda::live_module(function->module)) return CUDA_ERROR_INVALID_HANDLE;
  return cuda::materialise(*function->module);
}
}  // namespace

// Runs nothing; makes sure the kernel's module is loaded (lazy loading).
GPUMEM_SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                          CUstream stream, void** kernel_params, void** extra) {
  const cuLaunchKernel_params params{f,    gx, gy, gz, bx, by, bz, shared, stream, kernel_params,
                                     extra};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", params,
                [&] { return launch(f); });
}
GPUMEM_SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz,
                                               unsigned shared, CUstream stream,
                                               void** kernel_params, void** extra) {
  const cuLaunchKernel_params params{f,    gx, gy, gz, bx, by, bz, shared, stream, kernel_params,
                                     extra};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz", params,
                [&] { return launch(f); });
}
