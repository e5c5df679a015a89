// The simulated CUDA driver's memory calls. Each fires its driver-domain CUPTI callbacks (ENTER
// and EXIT, with the real *_params layout) around the work.
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/export.hpp"
#include "core/faults.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::AllocationKind;
using cuda::traced;

namespace {

// The memory exists (NVML shows it) before the call returns: the `memory_return_delay` fault
// widens that window (docs/simulator.md).
CUresult after_charge(CUresult rc) {
  const long delay_us = gpumem::sim::faults().memory_return_delay_us;
  if (rc == CUDA_SUCCESS && delay_us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  return rc;
}

CUresult allocate_current(CUdeviceptr* pointer, std::size_t bytes, AllocationKind kind) {
  if (pointer == nullptr || bytes == 0)
    return cuda::initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
  unsigned nvml = 0;
  if (const CUresult rc = cuda::current_device(&nvml)) return rc;
  std::uint64_t address = 0;
  if (const CUresult rc = cuda::allocate(nvml, bytes, kind, &address)) return rc;
  *pointer = address;
  return after_charge(CUDA_SUCCESS);
}

// cuMemFree takes memory of cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and the stream-ordered
// allocations alike (a pool block goes back to its pool).
CUresult free_pointer(CUdeviceptr pointer) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pointer == 0) return CUDA_SUCCESS;
  return after_charge(cuda::release(pointer));
}

}  // namespace

GPUMEM_SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* pointer, std::size_t bytes) {
  const cuMemAlloc_v2_params params{pointer, bytes};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", params,
                [&] { return allocate_current(pointer, bytes, AllocationKind::device); });
}

// Rows are padded to a multiple of 512 bytes, as the hardware's pitch alignment.
GPUMEM_SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* pointer, std::size_t* pitch,
                                              std::size_t width, std::size_t height,
                                              unsigned element_bytes) {
  const cuMemAllocPitch_v2_params params{pointer, pitch, width, height, element_bytes};
  return traced(
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, "cuMemAllocPitch_v2", params, [&]() -> CUresult {
        if (pitch == nullptr || width == 0 || height == 0 ||
            (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
          return cuda::initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
        }
        const std::size_t padded = (width + 511) / 512 * 512;
        const CUresult rc = allocate_current(pointer, padded * height, AllocationKind::device);
        if (rc == CUDA_SUCCESS) *pitch = padded;
        return rc;
      });
}

GPUMEM_SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
  const cuMemFree_v2_params params{pointer};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", params,
                [&] { return free_pointer(pointer); });
}

GPUMEM_SIM_EXPORT CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  struct {
    std::size_t* free;
    std::size_t* total;
  } const params{free, total};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, "cuMemGetInfo_v2", params,
                [&]() -> CUresult {
                  unsigned nvml = 0;
                  if (const CUresult rc = cuda::current_device(&nvml)) return rc;
                  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  const auto numbers = cuda::state().memory(nvml);
                  *free = numbers.free();
                  *total = numbers.total;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, std::size_t* size,
                                                   CUdeviceptr pointer) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::uint64_t found_base = 0, found_bytes = 0;
  if (!cuda::find_allocation(pointer, &found_base, &found_bytes) &&
      !cuda::find_mapping(pointer, &found_base, &found_bytes)) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (base != nullptr) *base = found_base;
  if (size != nullptr) *size = found_bytes;
  return CUDA_SUCCESS;
}

// Host-backed until prefetched to a device (cuMemPrefetchAsync): only resident pages use device
// memory.
GPUMEM_SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* pointer, std::size_t bytes,
                                             unsigned flags) {
  const cuMemAllocManaged_params params{pointer, bytes, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, "cuMemAllocManaged", params,
                [&] { return allocate_current(pointer, bytes, AllocationKind::managed); });
}

namespace {

// Residency is per allocation (a sim choice): prefetching any part of a managed allocation to a
// device makes all of it resident there, charged like a plain allocation; prefetching it to the
// host (or CU_DEVICE_CPU) makes it host-backed again.
CUresult prefetch(CUdeviceptr pointer, std::size_t bytes, int location_type, int location_id) {
  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const bool to_device = location_type == CU_MEM_LOCATION_TYPE_DEVICE;
  if (!to_device && location_type != CU_MEM_LOCATION_TYPE_HOST) return CUDA_ERROR_INVALID_VALUE;
  if (to_device && (location_id < 0 || location_id >= cuda::device_count()))
    return CUDA_ERROR_INVALID_DEVICE;
  const unsigned target = to_device ? cuda::nvml_index(location_id) : 0;
  if (to_device && cuda::state().lost(target)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  CUresult rc = CUDA_SUCCESS;
  const bool found = cuda::with_allocation(pointer, [&](cuda::Allocation& a) {
    if (a.kind != AllocationKind::managed) {
      rc = CUDA_ERROR_INVALID_VALUE;
      return;
    }
    if (a.resident && to_device && a.nvml_index == target) return;
    if (a.resident) {
      cuda::state().uncharge(a.nvml_index, a.charged);
      a.resident = false;
      a.charged = 0;
    }
    if (!to_device) return;
    const std::uint64_t charged = cuda::charge_for(a.bytes);
    if (!cuda::state().charge(target, charged)) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
      return;
    }
    a.resident = true;
    a.charged = charged;
    a.nvml_index = target;
  });
  return found ? rc : CUDA_ERROR_INVALID_VALUE;
}

struct cuMemPrefetchAsync_params {
  CUdeviceptr devPtr;
  std::size_t count;
  CUdevice dstDevice;
  CUstream hStream;
};
constexpr CUdevice kDeviceCpu = -1;  // CU_DEVICE_CPU

}  // namespace

GPUMEM_SIM_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr pointer, std::size_t bytes,
                                                 CUmemLocation location, unsigned flags,
                                                 CUstream stream) {
  const cuMemPrefetchAsync_v2_params params{pointer, bytes, location, flags, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2, "cuMemPrefetchAsync_v2", params,
                [&] { return prefetch(pointer, bytes, location.type, location.id); });
}

// The CUDA 12 signature, still exported for programs built against it.
GPUMEM_SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr pointer, std::size_t bytes,
                                              CUdevice device, CUstream stream) {
  const cuMemPrefetchAsync_params params{pointer, bytes, device, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync, "cuMemPrefetchAsync", params, [&] {
    return device == kDeviceCpu ? prefetch(pointer, bytes, CU_MEM_LOCATION_TYPE_HOST, 0)
                                : prefetch(pointer, bytes, CU_MEM_LOCATION_TYPE_DEVICE, device);
  });
}
