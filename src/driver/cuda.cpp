#include "driver/cuda.hpp"

#include "driver/library.hpp"
#include "query/diagnostics_log.hpp"

namespace gpumem::driver {

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
  api.deviceGetCount = lib.function<PFN_cuDeviceGetCount>("cuDeviceGetCount");
  api.deviceGet = lib.function<PFN_cuDeviceGet>("cuDeviceGet");
  api.deviceGetUuid = lib.function<PFN_cuDeviceGetUuid>({"cuDeviceGetUuid_v2", "cuDeviceGetUuid"});
  api.deviceGetPCIBusId = lib.function<PFN_cuDeviceGetPCIBusId>("cuDeviceGetPCIBusId");
  api.devicePrimaryCtxRetain =
      lib.function<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain");
  api.ctxSetCurrent = lib.function<PFN_cuCtxSetCurrent>("cuCtxSetCurrent");
  api.ctxGetCurrent = lib.function<PFN_cuCtxGetCurrent>("cuCtxGetCurrent");
  api.ctxGetDevice = lib.function<PFN_cuCtxGetDevice>("cuCtxGetDevice");
  // Only the _v2 symbols: the unversioned ones are CUDA 2's, with 32-bit sizes and pointers.
  api.memAlloc = lib.function<PFN_cuMemAlloc>("cuMemAlloc_v2");
  api.memFree = lib.function<PFN_cuMemFree>("cuMemFree_v2");
  api.memGetAddressRange = lib.function<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2");
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
    if (!loaded->loaded) detail::record_diagnostic(loaded->why);
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
      detail::record_diagnostic("CUDA: cuInit failed (" + cuda_error_name(rc) + ")");
    }
    return rc;
  }();
  return result;
}

std::string cuda_error_name(abi::CUresult code) {
  if (const char* name = abi::cuda_result_name(code)) return name;
  return "CUDA_ERROR_" + std::to_string(code);
}

}  // namespace gpumem::driver
