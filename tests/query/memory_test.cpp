// fastai.utils.mem's memory API against the simulated numbers.
#include <gtest/gtest.h>

#include <thread>

#include "gpumem/gpumem.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

TEST(B2mb, TruncatesTowardZero) {
  EXPECT_EQ(b2mb(0), 0);
  EXPECT_EQ(b2mb((1 << 20) - 1), 0);
  EXPECT_EQ(b2mb(1 << 20), 1);
  EXPECT_EQ(b2mb(3 * (1 << 20) + 5), 3);
  EXPECT_EQ(b2mb(-1), 0);
  EXPECT_EQ(b2mb(-(1 << 20) - 1), -1);
  EXPECT_EQ(b2mb(-3 * (1 << 20) + 1), -2);
}

TEST(ToMb, EachFieldTruncatedSeparately) {
  // used is total − free in bytes, then truncated: 6 MiB + 2 here, whatever NVML's used says.
  const GPUMemoryBytes bytes{10 * MiB + 1, 4 * MiB - 1, 5 * MiB, MiB + 2};
  EXPECT_EQ(to_mb(bytes), (GPUMemory{10, 3, 6}));
  EXPECT_EQ(to_mb(GPUMemoryBytes{MiB, 2 * MiB, 0, 0}), (GPUMemory{1, 2, 0}));  // never negative
}

TEST(GpuMemGet, OrdinalsFollowCudaOrder) {
  SimGpu sim;
  // used = total − free, as fastai.utils.mem read it (NVML v1): the driver's reservation counts.
  EXPECT_EQ(gpu_mem_get(0), (GPUMemory{kH200Total, kH200Total - kH200Reserved, kH200Reserved}));
  EXPECT_EQ(gpu_mem_get(1), (GPUMemory{kA100Total, kA100Total - kA100Reserved, kA100Reserved}));
  EXPECT_EQ(gpu_mem_get(), gpu_mem_get(0));  // the current device is 0 while CUDA is unused
}

TEST(GpuMemGet, BytesCarryTheReservation) {
  SimGpu sim;
  const auto bytes = gpu_mem_get_bytes(0);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->total, kH200Total * MiB);
  EXPECT_EQ(bytes->reserved, kH200Reserved * MiB);
  EXPECT_EQ(bytes->used, 0u);
  EXPECT_EQ(bytes->free, (kH200Total - kH200Reserved) * MiB);
}

TEST(GpuMemGet, InvalidIdsGiveZeros) {
  SimGpu sim;
  EXPECT_EQ(gpu_mem_get(2), GPUMemory{});
  EXPECT_EQ(gpu_mem_get(-7), GPUMemory{});
  EXPECT_EQ(gpu_mem_get(1 << 30), GPUMemory{});
  EXPECT_FALSE(gpu_mem_get_bytes(2).has_value());
  EXPECT_FALSE(gpu_handle(5).valid());
}

TEST(GpuMemGet, AllInOrdinalOrder) {
  SimGpu sim;
  const std::vector<GPUMemory> all = gpu_mem_get_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].total, kH200Total);
  EXPECT_EQ(all[1].total, kA100Total);
  EXPECT_EQ(all[1].free, kA100Total - kA100Reserved);
  EXPECT_EQ(all[1].used, kA100Reserved);
  const std::vector<GPUMemoryBytes> bytes = gpu_mem_get_all_bytes();
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], gpu_mem_get_bytes(0));
  EXPECT_EQ(bytes[1].reserved, kA100Reserved * MiB);
  EXPECT_EQ(bytes[1].used, 0u);
}

TEST(GpuMemGet, AllocationsShowInUsedAndFree) {
  SimGpu sim;
  DeviceAllocation block = device_allocate(300 * MiB, 0);
  ASSERT_TRUE(block.valid());
  EXPECT_EQ(block.size(), 300 * MiB);
  EXPECT_EQ(block.device(), 0);
  EXPECT_EQ(gpu_mem_get(0),
            (GPUMemory{kH200Total, kH200Total - kH200Reserved - 300, kH200Reserved + 300}));
  EXPECT_EQ(gpu_mem_get(1).used, kA100Reserved);
  EXPECT_EQ(gpu_mem_get_used(), kH200Reserved + 300);
  EXPECT_EQ(gpu_mem_get_free(), kH200Total - kH200Reserved - 300);
  block.reset();
  EXPECT_FALSE(block.valid());
  EXPECT_EQ(gpu_mem_get_used(), kH200Reserved);
}

TEST(GpuMemGet, SecondDeviceAllocation) {
  SimGpu sim;
  DeviceAllocation block = device_allocate(2 * MiB + 123, 1);
  ASSERT_TRUE(block.valid());
  EXPECT_EQ(gpu_mem_get_bytes(1)->used, 2 * MiB + 123);
  EXPECT_EQ(gpu_mem_get(1).used, kA100Reserved + 2);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved);
  EXPECT_EQ(active_device(), 1);  // the allocation made device 1 current
  EXPECT_EQ(gpu_mem_get_used(), kA100Reserved + 2);
}

TEST(GpuMemGet, MoveTransfersOwnership) {
  SimGpu sim;
  DeviceAllocation a = device_allocate(10 * MiB, 0);
  DeviceAllocation b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(b.valid());
  DeviceAllocation c = device_allocate(5 * MiB, 0);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 15);
  c = std::move(b);  // frees c's 5 MiB
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 10);
}

TEST(GpuMemGet, FailedAllocationIsInvalid) {
  SimGpu sim;
  EXPECT_FALSE(device_allocate(MiB, 2).valid());
  EXPECT_FALSE(device_allocate(MiB, -3).valid());
  EXPECT_FALSE(device_allocate(1'000'000 * MiB, 0).valid());
  EXPECT_EQ(last_diagnostic(), "GPU 0: cuMemAlloc failed (CUDA_ERROR_OUT_OF_MEMORY)");
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved);
}

TEST(GpuMemGetFast, ReadsThroughAHandle) {
  SimGpu sim;
  const GpuHandle handle = gpu_handle(1);
  ASSERT_TRUE(handle.valid());
  EXPECT_EQ(handle.device(), 1);
  EXPECT_EQ(gpu_mem_get_used_fast(handle), kA100Reserved);  // total − free, as gpu_mem_get
  DeviceAllocation block = device_allocate(64 * MiB + 7, 1);
  EXPECT_EQ(gpu_mem_get_used_fast(handle), kA100Reserved + 64);
  EXPECT_EQ(gpu_mem_get_used_fast(handle), gpu_mem_get(1).used);
  EXPECT_EQ(gpu_mem_get_used_bytes_fast(handle), 64 * MiB + 7);  // NVML's used, apart from it
}

TEST(GpuMemGetFast, InvalidHandle) {
  SimGpu sim;
  EXPECT_EQ(gpu_mem_get_used_fast(GpuHandle{}), 0);
  EXPECT_FALSE(gpu_mem_get_used_bytes_fast(GpuHandle{}).has_value());
}

TEST(MaxFree, PicksTheDeviceWithMostFree) {
  SimGpu sim;
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{0, kH200Total - kH200Reserved}));
}

TEST(MaxFree, FirstWinsOnTies) {
  SimGpu sim(kTwins);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{0, 23000}));
  DeviceAllocation block = device_allocate(MiB, 0);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{1, 23000}));
}

TEST(MaxFree, NoneWithoutGpus) {
  SimGpu sim;
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{std::nullopt, 0}));
  EXPECT_TRUE(gpu_mem_get_all().empty());
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(Preload, CreatesTheContextUpFront) {
  SimGpu sim(kWithContext);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved);
  EXPECT_TRUE(preload());
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 500);
  EXPECT_EQ(active_device(), 0);
  EXPECT_TRUE(preload());  // again: nothing more is charged
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 500);
  DeviceAllocation block = device_allocate(100 * MiB);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 600);
}

TEST(Preload, UsesTheCurrentDevice) {
  SimGpu sim;
  DeviceAllocation block = device_allocate(MiB, 1);
  EXPECT_TRUE(preload());
  EXPECT_EQ(active_device(), 1);
}

TEST(DeviceInfo, DescribesTheMappedDevice) {
  SimGpu sim;
  const auto info = device_info(0);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->device, 0);
  EXPECT_EQ(info->nvml_index, 1u);
  EXPECT_EQ(info->name, "NVIDIA H200");
  EXPECT_EQ(info->uuid, "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(info->pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(info->memory.total, kH200Total * MiB);
  EXPECT_EQ(info->memory.reserved, kH200Reserved * MiB);
  EXPECT_FALSE(device_info(2).has_value());
  EXPECT_FALSE(device_info(-4).has_value());
}

TEST(DeviceInfo, DevicesListsAllInOrder) {
  SimGpu sim;
  const auto all = devices();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "NVIDIA H200");
  EXPECT_EQ(all[1].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(all[1].nvml_index, 0u);
  EXPECT_EQ(all[1].device, 1);
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(driver_version(), "580.95.05");
  EXPECT_TRUE(nvml_available());
  EXPECT_TRUE(cuda_available());
}

TEST(CurrentDevice, IsPerThread) {
  SimGpu sim;
  EXPECT_EQ(active_device(), 0);
  int seen_in_thread = -1;
  std::thread worker([&] {
    DeviceAllocation block = device_allocate(MiB, 1);
    seen_in_thread = active_device();
  });
  worker.join();
  EXPECT_EQ(seen_in_thread, 1);
  EXPECT_EQ(active_device(), 0);  // this thread has no context
}

// With CUDA in the process, gpu_mem_get() reads the device of the calling thread's context, and
// device 0 on a thread without one.
TEST(CurrentDevice, GpuMemGetReadsTheThreadsDevice) {
  SimGpu sim;
  std::int64_t total_in_thread = -1;
  std::thread worker([&] {
    DeviceAllocation block = device_allocate(MiB, 1);
    total_in_thread = gpu_mem_get().total;
  });
  worker.join();
  EXPECT_EQ(total_in_thread, kA100Total);
  EXPECT_EQ(gpu_mem_get().total, kH200Total);  // this thread has no context
  DeviceAllocation block = device_allocate(MiB, 1);
  EXPECT_EQ(gpu_mem_get().total, kA100Total);
}

TEST(Concurrency, ManyThreadsReadTheSameNumbers) {
  SimGpu sim;
  DeviceAllocation block = device_allocate(42 * MiB, 1);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (gpu_mem_get(1).used != kA100Reserved + 42 || gpu_mem_get(0).total != kH200Total)
          ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace gpumem
