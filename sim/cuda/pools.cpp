// The simulated CUDA driver's stream-ordered allocator: memory pools (a default pool per device,
// the device's current pool, pools of cuMemPoolCreate), cuMemAllocAsync / cuMemAllocFromPoolAsync
// / cuMemFreeAsync, pool attributes and trimming.
//
// From the Driver API reference: a pool reserves backing memory and freed blocks return to it, not
// to the device; RELEASE_THRESHOLD (default 0) is how much reservation a pool keeps at a
// stream, event or context synchronisation; cuMemPoolTrimTo(keep) releases down to keep but never
// memory backing outstanding allocations ("if the pool has less than minBytesToKeep reserved, the
// TrimTo operation is a no-op"); the high watermarks can only be reset to 0 (to the current value).
// cuCtxDestroy does not free pool allocations: they belong to no context.
//
// Sim choices: the simulator runs no work, so every free is complete at once and a block is
// reusable by the next allocation; a pool packs its blocks perfectly (no fragmentation), so it
// grows only when used + request exceeds its reservation, by the shortfall rounded up to the page
// (kPageBytes, 2 MiB); used memory counts the requested bytes; a trim keeps the used bytes rounded
// up to the page.
#include <vector>

#include "core/export.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::traced;

struct gpumem::abi::CUmemPoolHandle_st {
  unsigned nvml;
  bool is_default;
  bool destroyed = false;
  std::uint64_t max_size = 0;  // 0: up to the device's memory
  std::uint64_t threshold = 0;
  std::uint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  int reuse[3] = {1, 1, 1};
};

namespace gpumem::sim::cuda {
namespace {

struct Pools {
  std::mutex mutex;
  std::vector<CUmemPoolHandle_st*> all;  // never freed: stale handles stay recognisable
  CUmemPoolHandle_st* defaults[kMaxDevices]{};
  CUmemPoolHandle_st* current[kMaxDevices]{};
};
Pools& pools() {
  static Pools* p = new Pools;
  return *p;
}

// Under the pools lock.
CUmemPoolHandle_st* default_pool(unsigned nvml) {
  Pools& p = pools();
  if (p.defaults[nvml] == nullptr) {
    p.defaults[nvml] = new CUmemPoolHandle_st{nvml, true};
    p.all.push_back(p.defaults[nvml]);
  }
  return p.defaults[nvml];
}
CUmemPoolHandle_st* current_pool(unsigned nvml) {
  Pools& p = pools();
  if (p.current[nvml] == nullptr) p.current[nvml] = default_pool(nvml);
  return p.current[nvml];
}
bool known(CUmemoryPool pool) {
  for (const CUmemPoolHandle_st* p : pools().all) {
    if (p == pool) return !pool->destroyed;
  }
  return false;
}

// Gives back reservation down to max(keep, used), in pages. Under the pools lock.
void trim(CUmemPoolHandle_st& pool, std::uint64_t keep) {
  if (pool.reserved <= keep) return;
  const std::uint64_t target = std::min(
      pool.reserved, std::max(round_up(pool.used, kPageBytes), round_up(keep, kPageBytes)));
  if (target >= pool.reserved) return;
  state().uncharge(pool.nvml, pool.reserved - target);
  pool.reserved = target;
}

// Takes `bytes` from the pool, growing its reservation when its free part is too small.
CUresult take(CUmemPoolHandle_st& pool, std::uint64_t bytes) {
  std::lock_guard lock(pools().mutex);
  if (pool.used + bytes > pool.reserved) {
    const std::uint64_t grow = round_up(pool.used + bytes - pool.reserved, kPageBytes);
    if (pool.max_size != 0 && pool.reserved + grow > pool.max_size) return CUDA_ERROR_OUT_OF_MEMORY;
    if (!state().charge(pool.nvml, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    pool.reserved += grow;
    pool.reserved_high = std::max(pool.reserved_high, pool.reserved);
  }
  pool.used += bytes;
  pool.used_high = std::max(pool.used_high, pool.used);
  return CUDA_SUCCESS;
}

CUresult allocate_from(CUdeviceptr* pointer, std::size_t bytes, CUmemoryPool pool) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned nvml = 0;
  if (const CUresult rc = current_device(&nvml)) return rc;
  if (pointer == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(pools().mutex);
    if (pool == nullptr) pool = current_pool(nvml);
    if (!known(pool)) return CUDA_ERROR_INVALID_VALUE;
  }
  if (state().lost(pool->nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  if (const CUresult rc = take(*pool, bytes)) return rc;
  std::uint64_t address = 0;
  allocate(pool->nvml, bytes, AllocationKind::pool, &address, pool);
  *pointer = address;
  return CUDA_SUCCESS;
}

CUresult free_async(CUdeviceptr pointer) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pointer == 0) return CUDA_ERROR_INVALID_VALUE;
  return release(pointer);
}

CUresult get_attribute(CUmemoryPool pool, int attribute, void* value) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(pools().mutex);
  if (!known(pool)) return CUDA_ERROR_INVALID_VALUE;
  auto* u64 = static_cast<std::uint64_t*>(value);
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = pool->reuse[attribute - 1];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *u64 = pool->threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *u64 = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *u64 = pool->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *u64 = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *u64 = pool->used_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult set_attribute(CUmemoryPool pool, int attribute, void* value) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(pools().mutex);
  if (!known(pool)) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t u64 = *static_cast<const std::uint64_t*>(value);
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse[attribute - 1] = *static_cast<const int*>(value) != 0 ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->threshold = u64;
      return CUDA_SUCCESS;
    // "High watermark can only be reset to zero": a high since the reset is the current value.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (u64 != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64 != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult create_pool(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pool == nullptr || props == nullptr || props->allocType != 1) return CUDA_ERROR_INVALID_VALUE;
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  if (props->location.id < 0 || props->location.id >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  auto* created = new CUmemPoolHandle_st{nvml_index(props->location.id), false};
  created->max_size = props->maxSize;
  std::lock_guard lock(pools().mutex);
  pools().all.push_back(created);
  *pool = created;
  return CUDA_SUCCESS;
}

// A pool with outstanding allocations is released once they are freed, as the reference says.
CUresult destroy_pool(CUmemoryPool pool) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Pools& p = pools();
  std::lock_guard lock(p.mutex);
  if (!known(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  if (p.current[pool->nvml] == pool) p.current[pool->nvml] = default_pool(pool->nvml);
  pool->destroyed = true;
  trim(*pool, 0);
  return CUDA_SUCCESS;
}

}  // namespace

void pool_block_freed(const Allocation& block) {
  std::lock_guard lock(pools().mutex);
  CUmemPoolHandle_st& pool = *block.pool;
  pool.used -= std::min(pool.used, block.bytes);
  if (pool.destroyed) trim(pool, 0);
}

void release_above_threshold(unsigned nvml) {
  std::lock_guard lock(pools().mutex);
  for (CUmemPoolHandle_st* pool : pools().all) {
    if (pool->nvml == nvml && !pool->destroyed) trim(*pool, pool->threshold);
  }
}

void pools_after_fork() {
  for (CUmemPoolHandle_st* pool : pools().all) {
    pool->reserved = pool->reserved_high = pool->used = pool->used_high = 0;
  }
}

}  // namespace gpumem::sim::cuda

GPUMEM_SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes,
                                           CUstream stream) {
  const cuMemAllocAsync_params params{pointer, bytes, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, "cuMemAllocAsync", params,
                [&] { return cuda::allocate_from(pointer, bytes, nullptr); });
}
GPUMEM_SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* pointer, std::size_t bytes,
                                                CUstream stream) {
  const cuMemAllocAsync_params params{pointer, bytes, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz", params,
                [&] { return cuda::allocate_from(pointer, bytes, nullptr); });
}

GPUMEM_SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* pointer, std::size_t bytes,
                                                   CUmemoryPool pool, CUstream stream) {
  const cuMemAllocFromPoolAsync_params params{pointer, bytes, pool, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", params,
                [&]() -> CUresult {
                  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  return cuda::allocate_from(pointer, bytes, pool);
                });
}
GPUMEM_SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* pointer, std::size_t bytes,
                                                        CUmemoryPool pool, CUstream stream) {
  const cuMemAllocFromPoolAsync_params params{pointer, bytes, pool, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
                "cuMemAllocFromPoolAsync_ptsz", params, [&]() -> CUresult {
                  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  return cuda::allocate_from(pointer, bytes, pool);
                });
}

GPUMEM_SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  const cuMemFreeAsync_params params{pointer, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, "cuMemFreeAsync", params,
                [&] { return cuda::free_async(pointer); });
}
GPUMEM_SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr pointer, CUstream stream) {
  const cuMemFreeAsync_params params{pointer, stream};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz", params,
                [&] { return cuda::free_async(pointer); });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  const cuDeviceGetDefaultMemPool_params params{pool, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool",
                params, [&]() -> CUresult {
                  if (const CUresult rc = cuda::check_device(device)) return rc;
                  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard lock(cuda::pools().mutex);
                  *pool = cuda::default_pool(cuda::nvml_index(device));
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice device) {
  const cuDeviceGetMemPool_params params{pool, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool, "cuDeviceGetMemPool", params,
                [&]() -> CUresult {
                  if (const CUresult rc = cuda::check_device(device)) return rc;
                  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard lock(cuda::pools().mutex);
                  *pool = cuda::current_pool(cuda::nvml_index(device));
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice device, CUmemoryPool pool) {
  const cuDeviceSetMemPool_params params{device, pool};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool, "cuDeviceSetMemPool", params,
                [&]() -> CUresult {
                  if (const CUresult rc = cuda::check_device(device)) return rc;
                  std::lock_guard lock(cuda::pools().mutex);
                  if (!cuda::known(pool)) return CUDA_ERROR_INVALID_VALUE;
                  const unsigned nvml = cuda::nvml_index(device);
                  if (pool->nvml != nvml) return CUDA_ERROR_INVALID_DEVICE;
                  cuda::pools().current[nvml] = pool;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  const cuMemPoolCreate_params params{pool, props};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate, "cuMemPoolCreate", params,
                [&] { return cuda::create_pool(pool, props); });
}

GPUMEM_SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  const cuMemPoolDestroy_params params{pool};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy, "cuMemPoolDestroy", params,
                [&] { return cuda::destroy_pool(pool); });
}

GPUMEM_SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attribute, void* value) {
  const cuMemPoolGetAttribute_params params{pool, attribute, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAttribute, "cuMemPoolGetAttribute", params,
                [&] { return cuda::get_attribute(pool, attribute, value); });
}

GPUMEM_SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attribute, void* value) {
  const cuMemPoolSetAttribute_params params{pool, attribute, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPoolSetAttribute, "cuMemPoolSetAttribute", params,
                [&] { return cuda::set_attribute(pool, attribute, value); });
}

GPUMEM_SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, std::size_t keep) {
  const cuMemPoolTrimTo_params params{pool, keep};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo, "cuMemPoolTrimTo", params,
                [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  std::lock_guard lock(cuda::pools().mutex);
                  if (!cuda::known(pool)) return CUDA_ERROR_INVALID_VALUE;
                  cuda::trim(*pool, keep);
                  return CUDA_SUCCESS;
                });
}
