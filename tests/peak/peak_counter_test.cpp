// PeakCounter on the simulated GPU with the exact (CUPTI) and reported sources.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "gpumem/allocate.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/peak.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using testing::MiB;
using testing::SimGpu;

TEST(PeakCounter, ExactSeesAllocationsAndSpikes) {
  SimGpu gpu;
  PeakCounter counter(0);
  ASSERT_EQ(counter.source(), Source::exact) << exact_source_status();
  EXPECT_EQ(counter.device(), 0);
  EXPECT_EQ(counter.read().start_bytes, 0);

  DeviceAllocation kept = device_allocate(10 * MiB, 0);
  ASSERT_TRUE(kept.valid());
  { DeviceAllocation spike = device_allocate(5 * MiB, 0); }

  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.source, Source::exact);
  EXPECT_EQ(reading.start_bytes, 0);
  EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(10 * MiB));
  EXPECT_EQ(reading.peak_bytes, static_cast<std::int64_t>(15 * MiB));
}

TEST(PeakCounter, AnchoredOnTheDevicesUsedMemory) {
  SimGpu gpu;
  DeviceAllocation before = device_allocate(3 * MiB, 0);
  ASSERT_TRUE(before.valid());
  const auto used = gpu_mem_get_bytes(0);
  ASSERT_TRUE(used);
  ASSERT_EQ(used->used, 3 * MiB);

  PeakCounter counter(0, Source::exact);
  DeviceAllocation more = device_allocate(1 * MiB, 0);
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.start_bytes, static_cast<std::int64_t>(3 * MiB));
  EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(reading.peak_bytes, static_cast<std::int64_t>(4 * MiB));
  // The level agrees with NVML's used memory.
  EXPECT_EQ(static_cast<std::uint64_t>(reading.current_bytes), gpu_mem_get_bytes(0)->used);
}

TEST(PeakCounter, OverlappingCountersAndResets) {
  SimGpu gpu;
  PeakCounter outer(0);
  DeviceAllocation a = device_allocate(4 * MiB, 0);
  auto inner = std::make_unique<PeakCounter>(0);
  { DeviceAllocation spike = device_allocate(6 * MiB, 0); }  // 10 MiB for both
  PeakCounter late(0);                                       // starts at 4 MiB
  inner.reset();                                             // the middle one ends first
  a.reset();                                                 // 0
  { DeviceAllocation spike = device_allocate(2 * MiB, 0); }  // 2 MiB

  EXPECT_EQ(outer.read().peak_bytes, static_cast<std::int64_t>(10 * MiB));
  EXPECT_EQ(outer.read().current_bytes, 0);
  const PeakReading l = late.read();
  EXPECT_EQ(l.start_bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(l.peak_bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(l.current_bytes, 0);

  outer.reset();  // forgets the 10 MiB for outer only
  { DeviceAllocation spike = device_allocate(1 * MiB, 0); }
  EXPECT_EQ(outer.read().peak_bytes, static_cast<std::int64_t>(1 * MiB));
  EXPECT_EQ(late.read().peak_bytes, static_cast<std::int64_t>(4 * MiB));
}

TEST(PeakCounter, EveryOneByteAllocationIsSeen) {
  SimGpu gpu;
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  for (std::size_t bytes = 1; bytes <= 300; ++bytes) {
    counter.reset();
    { DeviceAllocation spike = device_allocate(bytes, 0); }
    const PeakReading reading = counter.read();
    ASSERT_EQ(reading.peak_bytes - reading.start_bytes, static_cast<std::int64_t>(bytes));
    ASSERT_EQ(reading.current_bytes, reading.start_bytes);
  }
}

TEST(PeakCounter, EachDeviceHasItsOwnCounters) {
  SimGpu gpu;
  PeakCounter zero(0);
  PeakCounter one(1);
  DeviceAllocation on_one = device_allocate(7 * MiB, 1);
  ASSERT_TRUE(on_one.valid());
  EXPECT_EQ(one.read().current_bytes - one.read().start_bytes, static_cast<std::int64_t>(7 * MiB));
  EXPECT_EQ(zero.read().peak_bytes - zero.read().start_bytes, 0);
}

TEST(PeakCounter, ReportedSource) {
  SimGpu gpu;
  report_allocation(0, 1000);  // before the counter: part of nothing it reports
  PeakCounter counter(0, Source::reported);
  ASSERT_EQ(counter.source(), Source::reported);
  report_allocation(0, 300);
  report_allocation(0, 200);
  report_deallocation(0, 500);
  report_allocation(1, 999);  // another device
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, 500);
  EXPECT_EQ(reading.current_bytes, reading.start_bytes);
  report_deallocation(0, 1000);  // frees what was reported before it
  EXPECT_EQ(counter.read().current_bytes - counter.read().start_bytes, -1000);
}

TEST(PeakCounter, NoGpuReadsZero) {
  ::setenv("GPUMEM_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ::setenv("GPUMEM_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
  PeakCounter counter;
  EXPECT_EQ(counter.source(), Source::none);
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.start_bytes, 0);
  EXPECT_EQ(reading.current_bytes, 0);
  EXPECT_EQ(reading.peak_bytes, 0);
  PeakCounter sampled(0, Source::sampled);
  EXPECT_EQ(sampled.source(), Source::none);
}

TEST(PeakCounter, MovedCounterKeepsCounting) {
  SimGpu gpu;
  PeakCounter first(0);
  PeakCounter moved = std::move(first);
  { DeviceAllocation spike = device_allocate(2 * MiB, 0); }
  EXPECT_EQ(moved.read().peak_bytes, static_cast<std::int64_t>(2 * MiB));
}

// Threads allocate and free through the driver while others start, reset, read and destroy
// counters: every figure stays consistent, and the whole run adds up to the byte.
TEST(PeakCounter, ManyThreadsWithOverlappingCounters) {
  SimGpu gpu;
  PeakCounter whole(0);
  ASSERT_EQ(whole.source(), Source::exact);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        PeakCounter own(0);
        const std::size_t bytes = 1 + static_cast<std::size_t>(t * 1000 + i);
        DeviceAllocation block = device_allocate(bytes, 0);
        ASSERT_TRUE(block.valid());
        const PeakReading reading = own.read();
        // Other threads free meanwhile, so only the invariants hold per thread; the totals
        // below are exact.
        EXPECT_GE(reading.peak_bytes, reading.start_bytes);
        EXPECT_GE(reading.peak_bytes, reading.current_bytes);
        if (i % 7 == 0) own.reset();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const PeakReading total = whole.read();
  EXPECT_EQ(total.current_bytes, total.start_bytes);
  EXPECT_GE(total.peak_bytes - total.start_bytes, 3050);
  EXPECT_LE(total.peak_bytes - total.start_bytes, 50 + 1050 + 2050 + 3050);
}

}  // namespace
}  // namespace gpumem
