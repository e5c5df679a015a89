// The CUDA driver, loaded on first use. Loading never calls cuInit: initialising CUDA is slow
// and breaks fork-based data loaders, so gpumem only initialises it where the user asked for
// CUDA work (preload, device_allocate) and otherwise reads what the program already set up.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "driver/abi/cuda.hpp"

namespace gpumem::driver {

struct Cuda {
  bool loaded = false;
  std::string why;  // when not loaded
  abi::PFN_cuInit init = nullptr;
  abi::PFN_cuDriverGetVersion driverGetVersion = nullptr;
  abi::PFN_cuDeviceGetCount deviceGetCount = nullptr;
  abi::PFN_cuDeviceGet deviceGet = nullptr;
  abi::PFN_cuDeviceGetName deviceGetName = nullptr;
  abi::PFN_cuDeviceGetUuid deviceGetUuid = nullptr;  // _v2, else v1
  abi::PFN_cuDeviceGetPCIBusId deviceGetPCIBusId = nullptr;
  abi::PFN_cuDevicePrimaryCtxRetain devicePrimaryCtxRetain = nullptr;
  abi::PFN_cuCtxSetCurrent ctxSetCurrent = nullptr;
  abi::PFN_cuCtxGetCurrent ctxGetCurrent = nullptr;
  abi::PFN_cuCtxGetDevice ctxGetDevice = nullptr;
  abi::PFN_cuCtxGetDeviceOf ctxGetDeviceOf = nullptr;          // cuCtxGetDevice_v2 (CUDA 13)
  abi::PFN_cuMemAlloc memAlloc = nullptr;                      // _v2
  abi::PFN_cuMemFree memFree = nullptr;                        // _v2
  abi::PFN_cuMemGetAddressRange memGetAddressRange = nullptr;  // _v2
  // What the footprint reads beside the events (each nullptr on drivers without it).
  abi::PFN_cuMemGetInfo memGetInfo = nullptr;  // _v2
  abi::PFN_cuDevicePrimaryCtxGetState devicePrimaryCtxGetState = nullptr;
  abi::PFN_cuDevicePrimaryCtxRelease devicePrimaryCtxRelease = nullptr;  // _v2
  abi::PFN_cuCtxPushCurrent ctxPushCurrent = nullptr;                    // _v2
  abi::PFN_cuCtxPopCurrent ctxPopCurrent = nullptr;                      // _v2
  abi::PFN_cuDeviceGetMemPool deviceGetMemPool = nullptr;
  abi::PFN_cuMemPoolGetAttribute memPoolGetAttribute = nullptr;
  abi::PFN_cuDeviceGetGraphMemAttribute deviceGetGraphMemAttribute = nullptr;
};

// Loads once (no cuInit); the same object afterwards.
const Cuda& cuda() noexcept;

// Whether this process has initialised CUDA (cuCtxGetCurrent does not answer NOT_INITIALIZED).
// Inline because every query asks it until CUDA is up.
extern std::atomic<abi::PFN_cuCtxGetCurrent> g_loaded_ctx_get_current;  // set once loaded
bool cuda_initialized_slow() noexcept;
inline bool cuda_initialized() noexcept {
  if (const auto get_current = g_loaded_ctx_get_current.load(std::memory_order_acquire))
      [[likely]] {
    abi::CUcontext context = nullptr;
    return get_current(&context) != abi::CUDA_ERROR_NOT_INITIALIZED;
  }
  return cuda_initialized_slow();
}

// cuInit(0) once, for the calls that need CUDA work; CUDA_SUCCESS or the driver's error.
abi::CUresult cuda_init() noexcept;

// The driver's CUDA version (13000 for 13.0; cuDriverGetVersion works before cuInit), 0 when
// unknown.
int cuda_driver_version() noexcept;

// free and total bytes of a device by the driver (cuMemGetInfo in its primary context), only
// where that context is already active: nothing is created. nullopt otherwise.
struct DriverMemory {
  std::uint64_t free = 0;
  std::uint64_t total = 0;
};
std::optional<DriverMemory> driver_memory(int ordinal) noexcept;

// The CUDA ordinal of a context's device, -1 when the driver cannot tell.
int context_device(abi::CUcontext context) noexcept;

// "CUDA_ERROR_NO_DEVICE": the code's name alone (works without a loaded driver).
std::string cuda_error_name(abi::CUresult code);

}  // namespace gpumem::driver
