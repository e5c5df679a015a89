// A sliver of the CUDA runtime: each call fires its runtime-domain CUPTI callbacks and then calls
// the driver, which fires the driver-domain ones, giving the double view real CUDA gives.
#include <atomic>
#include <cstdint>

#include "core/export.hpp"
#include "core/shared_state.hpp"
#include "cuda/process.hpp"
#include "cuda/trace.hpp"

using namespace gpumem::abi;

using cudaError_t = int;
using cudaStream_t = CUstream;

extern "C" {
CUresult cuInit(unsigned flags);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device);
CUresult cuCtxSetCurrent(CUcontext context);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device);
CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active);
CUresult cuCtxGetCurrent(CUcontext* context);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuMemAlloc_v2(CUdeviceptr* pointer, std::size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr pointer);
CUresult cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream);
CUresult cuCtxSynchronize();
CUresult cuStreamSynchronize(CUstream stream);
GpumemSimDispatch gpumemSimCallbackDispatcher();
}

namespace gpumem::sim::cuda {
std::uint32_t next_correlation_id() {
  static std::atomic<std::uint32_t> next{1u << 31};  // apart from the driver's ids
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace gpumem::sim::cuda

namespace {

enum : std::uint32_t {
  kCbidGetDeviceCount = 3,
  kCbidSetDevice = 16,
  kCbidGetDevice = 17,
  kCbidDeviceSynchronize = 165,  // cudaDeviceSynchronize_v3020
  kCbidStreamSynchronize = 131,  // cudaStreamSynchronize_v3020
};
struct cudaStreamSynchronize_v3020_params {
  cudaStream_t stream;
};
struct NoParams {};

struct cudaSetDevice_v3020_params {
  int device;
};
struct cudaGetDevice_v3020_params {
  int* device;
};
struct cudaGetDeviceCount_v3020_params {
  int* count;
};
struct cudaMallocAsync_v11020_params {
  void** devPtr;
  std::size_t size;
  cudaStream_t hStream;
};
struct cudaFreeAsync_v11020_params {
  void* devPtr;
  cudaStream_t hStream;
};

// The runtime's error codes share the driver's values for every code the simulator produces.
cudaError_t runtime_error(CUresult rc) {
  switch (rc) {
    case CUDA_SUCCESS:
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return rc;
    default:
      return 999;
  }
}

template <class Params, class Body>
cudaError_t traced(std::uint32_t cbid, const char* name, const Params& params, Body&& body) {
  const GpumemSimDispatch dispatch = gpumemSimCallbackDispatcher();
  if (dispatch == nullptr) return body();
  CUcontext context = nullptr;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS) context = nullptr;
  return gpumem::sim::cuda::around<cudaError_t>(dispatch, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name,
                                                params, context,
                                                context != nullptr ? context->uid.load() : 0, body);
}

// The device the calling thread's runtime works on when it has no current context.
int& thread_device() {
  thread_local int device = 0;
  return device;
}

// The runtime holds one reference to each primary context it uses, for the process's lifetime.
std::atomic<bool> g_retained[gpumem::sim::kMaxDevices];

CUresult activate(int ordinal) {
  if (const CUresult rc = cuInit(0)) return rc;
  CUdevice device = 0;
  if (const CUresult rc = cuDeviceGet(&device, ordinal)) return rc;
  CUcontext context = nullptr;
  unsigned flags = 0;
  int active = 0;
  cuDevicePrimaryCtxGetState(device, &flags, &active);
  // A reset (cuDevicePrimaryCtxReset) destroyed the context under the runtime's reference: the
  // next runtime call creates it again, as cudaDeviceReset documents.
  if (g_retained[ordinal].exchange(true) && active != 0) {
    // Already holding a reference: take the handle without adding another.
    if (const CUresult rc = cuDevicePrimaryCtxRetain(&context, device)) return rc;
    cuDevicePrimaryCtxRelease_v2(device);
  } else if (const CUresult rc = cuDevicePrimaryCtxRetain(&context, device)) {
    g_retained[ordinal] = false;
    return rc;
  }
  return cuCtxSetCurrent(context);
}

CUresult ensure_context() {
  if (const CUresult rc = cuInit(0)) return rc;
  CUcontext context = nullptr;
  if (const CUresult rc = cuCtxGetCurrent(&context)) return rc;
  return context != nullptr ? CUDA_SUCCESS : activate(thread_device());
}

}  // namespace

GPUMEM_SIM_EXPORT cudaError_t cudaSetDevice(int device) {
  const cudaSetDevice_v3020_params params{device};
  return traced(kCbidSetDevice, "cudaSetDevice_v3020", params, [&] {
    if (const CUresult rc = cuInit(0)) return runtime_error(rc);
    int count = 0;
    cuDeviceGetCount(&count);
    if (device < 0 || device >= count) return runtime_error(CUDA_ERROR_INVALID_DEVICE);
    thread_device() = device;
    return runtime_error(activate(device));
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaGetDevice(int* device) {
  const cudaGetDevice_v3020_params params{device};
  return traced(kCbidGetDevice, "cudaGetDevice_v3020", params, [&] {
    if (device == nullptr) return runtime_error(CUDA_ERROR_INVALID_VALUE);
    if (const CUresult rc = cuInit(0)) return runtime_error(rc);
    CUdevice current = 0;
    *device = cuCtxGetDevice(&current) == CUDA_SUCCESS ? current : thread_device();
    return 0;
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  const cudaGetDeviceCount_v3020_params params{count};
  return traced(kCbidGetDeviceCount, "cudaGetDeviceCount_v3020", params, [&] {
    if (count == nullptr) return runtime_error(CUDA_ERROR_INVALID_VALUE);
    if (const CUresult rc = cuInit(0)) return runtime_error(rc);
    return runtime_error(cuDeviceGetCount(count));
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  const cudaMalloc_v3020_params params{pointer, bytes};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc_v3020", params, [&] {
    if (pointer == nullptr) return runtime_error(CUDA_ERROR_INVALID_VALUE);
    if (const CUresult rc = ensure_context()) return runtime_error(rc);
    if (bytes == 0) {
      *pointer = nullptr;
      return 0;
    }
    CUdeviceptr address = 0;
    if (const CUresult rc = cuMemAlloc_v2(&address, bytes)) return runtime_error(rc);
    *pointer = reinterpret_cast<void*>(address);
    return 0;
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaFree(void* pointer) {
  const cudaFree_v3020_params params{pointer};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree_v3020", params, [&] {
    if (const CUresult rc = ensure_context()) return runtime_error(rc);
    if (pointer == nullptr) return 0;
    return runtime_error(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(pointer)));
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaMallocAsync(void** pointer, std::size_t bytes,
                                              cudaStream_t stream) {
  const cudaMallocAsync_v11020_params params{pointer, bytes, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, "cudaMallocAsync_v11020", params,
                [&] {
                  if (pointer == nullptr) return runtime_error(CUDA_ERROR_INVALID_VALUE);
                  if (const CUresult rc = ensure_context()) return runtime_error(rc);
                  CUdeviceptr address = 0;
                  if (const CUresult rc = cuMemAllocAsync(&address, bytes, stream))
                    return runtime_error(rc);
                  *pointer = reinterpret_cast<void*>(address);
                  return 0;
                });
}

GPUMEM_SIM_EXPORT cudaError_t cudaFreeAsync(void* pointer, cudaStream_t stream) {
  const cudaFreeAsync_v11020_params params{pointer, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, "cudaFreeAsync_v11020", params, [&] {
    if (const CUresult rc = ensure_context()) return runtime_error(rc);
    return runtime_error(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(pointer), stream));
  });
}

// Synchronisation is where stream-ordered pools give back memory above their release threshold.
GPUMEM_SIM_EXPORT cudaError_t cudaDeviceSynchronize() {
  const NoParams params{};
  return traced(kCbidDeviceSynchronize, "cudaDeviceSynchronize_v3020", params, [&] {
    if (const CUresult rc = ensure_context()) return runtime_error(rc);
    return runtime_error(cuCtxSynchronize());
  });
}

GPUMEM_SIM_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  const cudaStreamSynchronize_v3020_params params{stream};
  return traced(kCbidStreamSynchronize, "cudaStreamSynchronize_v3020", params, [&] {
    if (const CUresult rc = ensure_context()) return runtime_error(rc);
    return runtime_error(cuStreamSynchronize(stream));
  });
}

GPUMEM_SIM_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case 0:
      return "no error";
    case 1:
      return "invalid argument";
    case 2:
      return "out of memory";
    case 3:
      return "initialization error";
    case 34:
      return "CUDA driver is a stub library";
    case 46:
      return "CUDA-capable device(s) is/are busy or unavailable";
    case 100:
      return "no CUDA-capable device is detected";
    case 101:
      return "invalid device ordinal";
    case 201:
      return "invalid device context";
    case 709:
      return "context is destroyed";
    default:
      return "unknown error";
  }
}
