// Stream-ordered pools as the Driver API reference describes them: the device sees a pool's
// reservation (grown in 2 MiB pages here), not its live blocks; freed blocks stay reserved and are
// reused; synchronisation releases what lies above the release threshold (default 0);
// cuMemPoolTrimTo never releases memory backing live blocks; high watermarks reset to 0 only.
#include <gtest/gtest.h>

#include "sim_driver.hpp"

namespace gpumem::testing {
namespace {

using PoolAttr = CUresult (*)(CUmemoryPool, int, void*);
using PoolCreate = CUresult (*)(CUmemoryPool*, const CUmemPoolProps*);
using PoolDestroy = CUresult (*)(CUmemoryPool);
using SetMemPool = CUresult (*)(CUdevice, CUmemoryPool);
using Sync = CUresult (*)();
using StreamSync = CUresult (*)(CUstream);
using EventSync = CUresult (*)(CUevent);

struct Pools : Driver {
  Pools() { use(1); }  // CUDA 1 = NVML 0 in kTwoGpus
  CUmemoryPool current() {
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(fn<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, 1), CUDA_SUCCESS);
    return pool;
  }
  std::uint64_t attr(CUmemoryPool pool, int attribute) {
    std::uint64_t value = ~0ull;
    EXPECT_EQ(fn<PoolAttr>("cuMemPoolGetAttribute")(pool, attribute, &value), CUDA_SUCCESS);
    return value;
  }
  CUresult set(CUmemoryPool pool, int attribute, std::uint64_t value) {
    return fn<PoolAttr>("cuMemPoolSetAttribute")(pool, attribute, &value);
  }
  CUdeviceptr alloc(std::size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&p, bytes, nullptr), CUDA_SUCCESS);
    return p;
  }
  void free(CUdeviceptr p) {
    EXPECT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(p, nullptr), CUDA_SUCCESS);
  }
  // The pool's reservation is what the device shows: NVML, per process, cuMemGetInfo.
  void expect_device(std::uint64_t bytes) {
    EXPECT_EQ(nvml_used(0), bytes);
    EXPECT_EQ(process_used(0), bytes);
    EXPECT_EQ(cuda_used(), bytes + 256 * MiB);
  }
};

TEST(simPool, DefaultPool) {
  SimGpu gpu;
  Pools d;
  CUmemoryPool fallback = nullptr;
  ASSERT_EQ(d.fn<PFN_cuDeviceGetMemPool>("cuDeviceGetDefaultMemPool")(&fallback, 1), CUDA_SUCCESS);
  EXPECT_EQ(d.current(), fallback);
  EXPECT_EQ(d.attr(fallback, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0u);
  EXPECT_EQ(d.attr(fallback, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.attr(fallback, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  int reuse = 0;
  ASSERT_EQ(d.fn<PoolAttr>("cuMemPoolGetAttribute")(
                fallback, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
            CUDA_SUCCESS);
  EXPECT_EQ(reuse, 1);
  CUmemoryPool other = nullptr;
  ASSERT_EQ(d.fn<PFN_cuDeviceGetMemPool>("cuDeviceGetDefaultMemPool")(&other, 0), CUDA_SUCCESS);
  EXPECT_NE(other, fallback);  // one per device
}

TEST(simPool, ReservationGrowsInPagesAndFreedBlocksAreReused) {
  SimGpu gpu;
  Pools d;
  const CUmemoryPool pool = d.current();
  const CUdeviceptr a = d.alloc(MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), MiB);
  d.expect_device(2 * MiB);
  const CUdeviceptr b = d.alloc(512 * 1024);  // fits in what is reserved
  d.expect_device(2 * MiB);
  const CUdeviceptr c = d.alloc(3 * MiB);  // 4.5 MiB used: grows by 4 MiB
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4 * MiB + 512 * 1024);
  d.expect_device(6 * MiB);
  d.free(a);
  d.free(b);
  d.free(c);
  // Freed blocks go back to the pool, not to the device.
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * MiB);
  d.expect_device(6 * MiB);
  const CUdeviceptr e = d.alloc(5 * MiB);  // reused
  d.expect_device(6 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 5 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 6 * MiB);
  // cuMemFree takes stream-ordered memory too: back to its pool.
  ASSERT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(e), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  d.expect_device(6 * MiB);
}

TEST(simPool, SynchronisationReleasesAboveTheThreshold) {
  SimGpu gpu;
  Pools d;
  const CUmemoryPool pool = d.current();
  d.free(d.alloc(10 * MiB));
  d.expect_device(10 * MiB);
  ASSERT_EQ(d.fn<StreamSync>("cuStreamSynchronize")(nullptr), CUDA_SUCCESS);
  d.expect_device(0);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 10 * MiB);

  ASSERT_EQ(d.set(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 4 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 4 * MiB);
  d.free(d.alloc(10 * MiB));
  ASSERT_EQ(d.fn<Sync>("cuCtxSynchronize")(), CUDA_SUCCESS);
  d.expect_device(4 * MiB);

  // Live blocks are never released: 7 MiB in use keeps 8 MiB.
  const CUdeviceptr live = d.alloc(7 * MiB);
  d.free(d.alloc(20 * MiB));
  d.expect_device(28 * MiB);
  ASSERT_EQ(d.set(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0), CUDA_SUCCESS);
  CUevent event = reinterpret_cast<CUevent>(0x1);
  ASSERT_EQ(d.fn<EventSync>("cuEventSynchronize")(event), CUDA_SUCCESS);
  d.expect_device(8 * MiB);
  d.free(live);
  ASSERT_EQ(d.fn<StreamSync>("cuStreamSynchronize_ptsz")(nullptr), CUDA_SUCCESS);
  d.expect_device(0);
}

TEST(simPool, TrimTo) {
  SimGpu gpu;
  Pools d;
  const CUmemoryPool pool = d.current();
  const CUdeviceptr live = d.alloc(3 * MiB);
  d.free(d.alloc(6 * MiB));
  d.expect_device(10 * MiB);
  auto trim = d.fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo");
  ASSERT_EQ(trim(pool, 20 * MiB), CUDA_SUCCESS);  // holds less than that: a no-op
  d.expect_device(10 * MiB);
  ASSERT_EQ(trim(pool, 6 * MiB), CUDA_SUCCESS);  // keeps at least 6 MiB
  d.expect_device(6 * MiB);
  ASSERT_EQ(trim(pool, 0), CUDA_SUCCESS);  // the live 3 MiB keep their 4 MiB
  d.expect_device(4 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
  d.free(live);
  ASSERT_EQ(trim(pool, 0), CUDA_SUCCESS);
  d.expect_device(0);
}

TEST(simPool, HighWatermarksResetToZeroOnly) {
  SimGpu gpu;
  Pools d;
  const CUmemoryPool pool = d.current();
  const CUdeviceptr live = d.alloc(3 * MiB);
  d.free(d.alloc(6 * MiB));
  ASSERT_EQ(d.fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 9 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 10 * MiB);
  EXPECT_EQ(d.set(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 5), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.set(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 5), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.set(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(d.set(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.set(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 3 * MiB);  // back to the current value
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 4 * MiB);
  d.free(live);
}

TEST(simPool, CreatedPoolAsTheDevicesCurrentPool) {
  SimGpu gpu;
  Pools d;
  const CUmemoryPool fallback = d.current();
  CUmemPoolProps props{};
  props.allocType = 1;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
  props.maxSize = 16 * MiB;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(d.fn<PoolCreate>("cuMemPoolCreate")(&pool, &props), CUDA_SUCCESS);
  EXPECT_EQ(d.fn<SetMemPool>("cuDeviceSetMemPool")(0, pool), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(d.fn<SetMemPool>("cuDeviceSetMemPool")(1, pool), CUDA_SUCCESS);
  EXPECT_EQ(d.current(), pool);
  const CUdeviceptr block = d.alloc(5 * MiB);
  EXPECT_EQ(d.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * MiB);
  EXPECT_EQ(d.attr(fallback, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  CUdeviceptr p = 0;
  EXPECT_EQ(d.fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&p, 12 * MiB, nullptr),
            CUDA_ERROR_OUT_OF_MEMORY);  // beyond maxSize
  ASSERT_EQ(
      d.fn<PFN_cuMemAllocFromPoolAsync>("cuMemAllocFromPoolAsync")(&p, MiB, fallback, nullptr),
      CUDA_SUCCESS);
  d.expect_device(8 * MiB);
  d.free(p);
  // Destroyed with a live block: released once that block is freed; the default pool is current.
  ASSERT_EQ(d.fn<PoolDestroy>("cuMemPoolDestroy")(pool), CUDA_SUCCESS);
  EXPECT_EQ(d.current(), fallback);
  d.expect_device(8 * MiB);
  d.free(block);
  d.expect_device(2 * MiB);  // the default pool's page, kept until a synchronisation
  EXPECT_EQ(d.fn<PoolDestroy>("cuMemPoolDestroy")(fallback), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.fn<PFN_cuMemAllocFromPoolAsync>("cuMemAllocFromPoolAsync")(&p, MiB, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

TEST(simPool, RuntimeAllocatesFromTheCurrentPool) {
  SimGpu gpu;
  SimLibrary cudart("libcudart.so.13");
  ASSERT_EQ(cudart.get<int (*)(int)>("cudaSetDevice")(1), 0);
  void* p = nullptr;
  ASSERT_EQ(
      cudart.get<int (*)(void**, std::size_t, CUstream)>("cudaMallocAsync")(&p, 3 * MiB, nullptr),
      0);
  ASSERT_EQ(cudart.get<int (*)(void*, CUstream)>("cudaFreeAsync")(p, nullptr), 0);
  Driver d;
  EXPECT_EQ(d.nvml_used(0), 4 * MiB);
  ASSERT_EQ(cudart.get<int (*)(CUstream)>("cudaStreamSynchronize")(nullptr), 0);
  EXPECT_EQ(d.nvml_used(0), 0u);
  ASSERT_EQ(cudart.get<int (*)(void**, std::size_t, CUstream)>("cudaMallocAsync")(&p, MiB, nullptr),
            0);
  ASSERT_EQ(cudart.get<int (*)(void*, CUstream)>("cudaFreeAsync")(p, nullptr), 0);
  EXPECT_EQ(d.process_used(0), 2 * MiB);
  ASSERT_EQ(cudart.get<int (*)()>("cudaDeviceSynchronize")(), 0);
  EXPECT_EQ(d.process_used(0), 0u);
}

}  // namespace
}  // namespace gpumem::testing
