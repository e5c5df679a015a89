#include "driver/cuda.hpp"

#include "gpumem/internal/shared_library.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::driver {

using support::SharedLibrary;

namespace {

using namespace abi;

Cuda load_cuda() {
  Cuda api;
  // Leaked on purpose: contexts and callbacks may still use the driver during process exit.
  static auto* library =
      new SharedLibrary(SharedLibrary::open("GPUMEM_CUDA_LIBRARY", {"libcuda.so.1", "libcuda.so"}));
  if (!library->loaded()) {
    api.why = "CUDA driver not found (" + library->error() + ")";
    return api;
  }
  const SharedLibrary& lib = *library;
  api.init = lib.function<PFN_cuInit>("cuInit");
  api.driverGetVersion = lib.function<PFN_cuDriverGetVersion>("cuDriverGetVersion");
  api.deviceGetCount = lib.function<PFN_cuDeviceGetCount>("cuDeviceGetCount");
  api.deviceGet = lib.function<PFN_cuDeviceGet>("cuDeviceGet");
  api.deviceGetName = lib.function<PFN_cuDeviceGetName>("cuDeviceGetName");
  api.deviceGetUuid = lib.function<PFN_cuDeviceGetUuid>({"cuDeviceGetUuid_v2", "cuDeviceGetUuid"});
  api.deviceGetPCIBusId = lib.function<PFN_cuDeviceGetPCIBusId>("cuDeviceGetPCIBusId");
  api.devicePrimaryCtxRetain =
      lib.function<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain");
  api.ctxSetCurrent = lib.function<PFN_cuCtxSetCurrent>("cuCtxSetCurrent");
  api.ctxGetCurrent = lib.function<PFN_cuCtxGetCurrent>("cuCtxGetCurrent");
  api.ctxGetDevice = lib.function<PFN_cuCtxGetDevice>("cuCtxGetDevice");
  api.ctxGetDeviceOf = lib.function<PFN_cuCtxGetDeviceOf>("cuCtxGetDevice_v2");
  // Only the _v2 symbols: the unversioned ones are CUDA 2's, with 32-bit sizes and pointers.
  api.memAlloc = lib.function<PFN_cuMemAlloc>("cuMemAlloc_v2");
  api.memFree = lib.function<PFN_cuMemFree>("cuMemFree_v2");
  api.memGetAddressRange = lib.function<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2");
  api.memGetInfo = lib.function<PFN_cuMemGetInfo>("cuMemGetInfo_v2");
  api.devicePrimaryCtxGetState =
      lib.function<PFN_cuDevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
  api.devicePrimaryCtxRelease =
      lib.function<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxRelease_v2");
  api.ctxPushCurrent = lib.function<PFN_cuCtxPushCurrent>("cuCtxPushCurrent_v2");
  api.ctxPopCurrent = lib.function<PFN_cuCtxPopCurrent>("cuCtxPopCurrent_v2");
  api.deviceGetMemPool = lib.function<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool");
  api.memPoolGetAttribute = lib.function<PFN_cuMemPoolGetAttribute>("cuMemPoolGetAttribute");
  api.deviceGetGraphMemAttribute =
      lib.function<PFN_cuDeviceGetGraphMemAttribute>("cuDeviceGetGraphMemAttribute");
  if (api.init == nullptr || api.deviceGetCount == nullptr || api.deviceGet == nullptr ||
      api.ctxGetCurrent == nullptr) {
    api.why =
        "CUDA driver unusable: " + lib.path() + " lacks cuInit, cuDeviceGet or cuCtxGetCurrent";
    return api;
  }
  api.loaded = true;
  return api;
}

}  // namespace

const Cuda& cuda() noexcept {
  // Never destroyed: queries may run from other threads or static destructors at exit.
  static const Cuda& api = *[] {
    auto* loaded = new Cuda(load_cuda());
    if (!loaded->loaded) support::record_diagnostic(loaded->why);
    if (loaded->loaded)
      g_loaded_ctx_get_current.store(loaded->ctxGetCurrent, std::memory_order_release);
    return loaded;
  }();
  return api;
}

std::atomic<abi::PFN_cuCtxGetCurrent> g_loaded_ctx_get_current{nullptr};

bool cuda_initialized_slow() noexcept {
  const Cuda& api = cuda();
  if (!api.loaded) return false;
  CUcontext context = nullptr;
  return api.ctxGetCurrent(&context) != CUDA_ERROR_NOT_INITIALIZED;
}

abi::CUresult cuda_init() noexcept {
  static const CUresult result = [] {
    const Cuda& api = cuda();
    if (!api.loaded) return CUresult{CUDA_ERROR_NOT_INITIALIZED};
    const CUresult rc = api.init(0);
    if (rc != CUDA_SUCCESS) {
      support::record_diagnostic("CUDA: cuInit failed (" + cuda_error_name(rc) + ")");
    }
    return rc;
  }();
  return result;
}

int cuda_driver_version() noexcept {
  const Cuda& api = cuda();
  int version = 0;
  if (api.driverGetVersion == nullptr || api.driverGetVersion(&version) != CUDA_SUCCESS) return 0;
  return version;
}

std::optional<DriverMemory> driver_memory(int ordinal) noexcept {
  const Cuda& api = cuda();
  if (!api.loaded || api.memGetInfo == nullptr || !cuda_initialized()) return std::nullopt;
  // The calling thread's own context, where it is on that device: nothing to switch.
  CUcontext current = nullptr;
  if (api.ctxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr &&
      context_device(current) == ordinal) {
    size_t free = 0, total = 0;
    if (api.memGetInfo(&free, &total) == CUDA_SUCCESS) return DriverMemory{free, total};
    return std::nullopt;
  }
  if (api.devicePrimaryCtxGetState == nullptr || api.devicePrimaryCtxRetain == nullptr ||
      api.devicePrimaryCtxRelease == nullptr || api.ctxPushCurrent == nullptr ||
      api.ctxPopCurrent == nullptr) {
    return std::nullopt;
  }
  CUdevice device = 0;
  unsigned flags = 0;
  int active = 0;
  if (api.deviceGet(&device, ordinal) != CUDA_SUCCESS ||
      api.devicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || active == 0) {
    return std::nullopt;
  }
  CUcontext context = nullptr;
  if (api.devicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS) return std::nullopt;
  std::optional<DriverMemory> memory;
  if (api.ctxPushCurrent(context) == CUDA_SUCCESS) {
    size_t free = 0, total = 0;
    if (api.memGetInfo(&free, &total) == CUDA_SUCCESS) memory = DriverMemory{free, total};
    CUcontext popped = nullptr;
    api.ctxPopCurrent(&popped);
  }
  api.devicePrimaryCtxRelease(device);
  return memory;
}

int context_device(abi::CUcontext context) noexcept {
  const Cuda& api = cuda();
  CUdevice device = -1;
  if (context == nullptr || !api.loaded) return -1;
  if (api.ctxGetDeviceOf != nullptr) {
    return api.ctxGetDeviceOf(&device, context) == CUDA_SUCCESS ? device : -1;
  }
  if (api.ctxPushCurrent == nullptr || api.ctxPopCurrent == nullptr ||
      api.ctxGetDevice == nullptr || api.ctxPushCurrent(context) != CUDA_SUCCESS) {
    return -1;
  }
  if (api.ctxGetDevice(&device) != CUDA_SUCCESS) device = -1;
  CUcontext popped = nullptr;
  api.ctxPopCurrent(&popped);
  return device;
}

std::string cuda_error_name(abi::CUresult code) {
  if (const char* name = abi::cuda_result_name(code)) return name;
  return "CUDA_ERROR_" + std::to_string(code);
}

}  // namespace gpumem::driver
