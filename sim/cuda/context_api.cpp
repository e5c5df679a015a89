// The simulated CUDA driver's contexts: primary contexts (retain, release, reset), contexts of
// cuCtxCreate, the per-thread context stack, and synchronisation (where stream-ordered pools give
// back what they hold above their release threshold).
#include "core/export.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::traced;

namespace {

// cuCtxCreate pushes the new context on the calling thread's stack.
CUresult create(CUcontext* context, CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = cuda::create_context(device, context)) return rc;
  cuda::push_context(*context);
  return CUDA_SUCCESS;
}

// Synchronisation on the current context's device (the simulator runs no work: every stream and
// event is complete), where pools trim to their release thresholds.
CUresult synchronize_current() {
  unsigned nvml = 0;
  if (const CUresult rc = cuda::current_device(&nvml)) return rc;
  cuda::release_above_threshold(nvml);
  return CUDA_SUCCESS;
}

struct NoParams {};

}  // namespace

// Retain and release fire no callbacks here: the runtime creates its primary context through
// them, and a runtime call shows its own callbacks, not those of the driver's internals.
GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = cuda::retain_primary(device)) return rc;
  *context = cuda::primary_context(device);
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  return cuda::release_primary(device);
}
GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  return cuDevicePrimaryCtxRelease_v2(device);
}

GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) {
  const cuDevicePrimaryCtxReset_v2_params params{device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset_v2",
                params, [&]() -> CUresult {
                  if (const CUresult rc = cuda::check_device(device)) return rc;
                  return cuda::reset_primary(device);
                });
}
GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) {
  return cuDevicePrimaryCtxReset_v2(device);
}

GPUMEM_SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags,
                                                      int* active) {
  if (const CUresult rc = cuda::check_device(device)) return rc;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  *active = cuda::primary_context(device)->retained.load() > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext* context, unsigned flags, CUdevice device) {
  const cuCtxCreate_v2_params params{context, flags, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2, "cuCtxCreate_v2", params,
                [&] { return create(context, device); });
}
GPUMEM_SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext* context, void* affinity, int affinity_count,
                                          unsigned flags, CUdevice device) {
  const cuCtxCreate_v3_params params{context, affinity, affinity_count, flags, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3, "cuCtxCreate_v3", params,
                [&] { return create(context, device); });
}
GPUMEM_SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext* context, void* create_params, unsigned flags,
                                          CUdevice device) {
  const cuCtxCreate_v4_params params{context, create_params, flags, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4, "cuCtxCreate_v4", params,
                [&] { return create(context, device); });
}

GPUMEM_SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext context) {
  const cuCtxDestroy_v2_params params{context};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2, "cuCtxDestroy_v2", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  return cuda::destroy_context(context);
                });
}

// Replaces the top of the calling thread's stack; NULL pops it.
GPUMEM_SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext context) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (context == nullptr) {
    cuda::pop_context();
    return CUDA_SUCCESS;
  }
  if (cuda::ordinal_of(context) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  cuda::current_context() = context;
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* context) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *context = cuda::current_context();
  return CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext context) {
  const struct { CUcontext ctx; } params{context};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (context == nullptr || cuda::ordinal_of(context) < 0)
                    return CUDA_ERROR_INVALID_CONTEXT;
                  cuda::push_context(context);
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  const struct { CUcontext* pctx; } params{context};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (cuda::current_context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
                  const CUcontext popped = cuda::pop_context();
                  if (context != nullptr) *context = popped;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext context) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (context == nullptr) context = cuda::current_context();
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  const int ordinal = cuda::ordinal_of(context);
  if (ordinal < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ordinal;
  return CUDA_SUCCESS;
}
GPUMEM_SIM_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  return cuCtxGetDevice_v2(device, nullptr);
}

GPUMEM_SIM_EXPORT CUresult cuCtxSynchronize() {
  const NoParams params{};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", params,
                [] { return synchronize_current(); });
}

GPUMEM_SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext context) {
  const cuCtxSynchronize_v2_params params{context};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, "cuCtxSynchronize_v2", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (context == nullptr) return synchronize_current();
                  if (!cuda::context_alive(context)) return CUDA_ERROR_INVALID_CONTEXT;
                  cuda::release_above_threshold(context->nvml_index);
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  const cuStreamSynchronize_params params{stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize", params,
                [] { return synchronize_current(); });
}
GPUMEM_SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) {
  const cuStreamSynchronize_params params{stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz",
                params, [] { return synchronize_current(); });
}

GPUMEM_SIM_EXPORT CUresult cuEventSynchronize(CUevent event) {
  const cuEventSynchronize_params params{event};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize", params,
                [&]() -> CUresult {
                  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
                  return synchronize_current();
                });
}
