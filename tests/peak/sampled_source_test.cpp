// The sampled source: one thread per device, shared, running only while a counter needs it, and
// synchronous samples at start, reset and read.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpumem/allocate.hpp"
#include "gpumem/peak.hpp"
#include "peak/channels.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using testing::MiB;
using testing::SimGpu;

int thread_count() {
  int count = 0;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(tasks)) {
      if (entry->d_name[0] != '.') ++count;
    }
    ::closedir(tasks);
  }
  return count;
}

// A joined thread can linger in /proc/self/task for a moment after join() returns: wait for the
// count to settle on `want` (or give up after a few seconds and return what is there).
int thread_count_settling_on(int want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int count = thread_count();
  while (count != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    count = thread_count();
  }
  return count;
}

// Waits (without a deadline that could fail on a slow machine) until the sampler thread itself
// has fed `level` into the channel: reading the channel takes no sample.
void wait_for_sampler(int device, std::int64_t level) {
  const peak::Channel* sampled = peak::channel(peak::Stream::sampled, device);
  while (sampled->level() != level) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

TEST(SampledSource, DefaultIntervalIsAtMostOneMillisecond) {
  EXPECT_LE(sampling_interval(), std::chrono::milliseconds(1));
  EXPECT_GT(sampling_interval(), std::chrono::nanoseconds::zero());
  set_sampling_interval(std::chrono::microseconds(250));
  EXPECT_EQ(sampling_interval(), std::chrono::microseconds(250));
  set_sampling_interval(std::chrono::nanoseconds(0));  // back to the default
  EXPECT_LE(sampling_interval(), std::chrono::milliseconds(1));
}

// The sampled source measures the device used, total - free: on the simulated H200 (CUDA 0 of
// SimGpu), its 542 MiB reservation plus what is allocated.
constexpr std::int64_t kReserved0 = 542 * MiB;

TEST(SampledSource, SynchronousSamplesAtStartAndRead) {
  SimGpu gpu;
  DeviceAllocation before = device_allocate(2 * MiB, 0);
  PeakCounter counter(0, Source::sampled);
  ASSERT_EQ(counter.source(), Source::sampled);
  EXPECT_EQ(counter.read().quantity, Quantity::device_used);
  EXPECT_EQ(counter.read().start_bytes, kReserved0 + static_cast<std::int64_t>(2 * MiB));
  DeviceAllocation during = device_allocate(10 * MiB, 0);
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.current_bytes, kReserved0 + static_cast<std::int64_t>(12 * MiB));
  EXPECT_EQ(reading.peak_bytes, kReserved0 + static_cast<std::int64_t>(12 * MiB));
  EXPECT_EQ(reading.device_used_peak_bytes, reading.peak_bytes);
  const GPUMemoryBytes memory = gpu_mem_get_bytes(0).value();
  EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(memory.total - memory.free));
  during.reset();
  counter.reset();
  EXPECT_EQ(counter.read().start_bytes, kReserved0 + static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(counter.read().peak_bytes, kReserved0 + static_cast<std::int64_t>(2 * MiB));
}

TEST(SampledSource, TheThreadCatchesASpikeBetweenReads) {
  SimGpu gpu;
  PeakCounter counter(0, Source::sampled);
  ASSERT_EQ(counter.source(), Source::sampled);
  {
    DeviceAllocation spike = device_allocate(5 * MiB, 0);
    wait_for_sampler(0, static_cast<std::int64_t>(5 * MiB));
  }
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.current_bytes, kReserved0);
  EXPECT_EQ(reading.peak_bytes, kReserved0 + static_cast<std::int64_t>(5 * MiB));
}

TEST(SampledSource, OneSharedThreadPerDeviceOnlyWhileNeeded) {
  SimGpu gpu;
  DeviceAllocation warm = device_allocate(1, 0);  // CUDA's own threads, if any, exist by now
  int base = 0;
  {
    // A sanitizer's helper thread, if any, exists by now too; only the sampler's goes away.
    PeakCounter first(0, Source::sampled);
    base = thread_count() - 1;
  }
  {
    PeakCounter a(0, Source::sampled);
    EXPECT_EQ(thread_count_settling_on(base + 1), base + 1);
    PeakCounter b(0, Source::sampled);
    EXPECT_EQ(thread_count_settling_on(base + 1), base + 1);
    PeakCounter other_device(1, Source::sampled);
    EXPECT_EQ(thread_count_settling_on(base + 2), base + 2);
  }
  EXPECT_EQ(thread_count_settling_on(base), base);
  PeakCounter again(0, Source::sampled);
  EXPECT_EQ(thread_count_settling_on(base + 1), base + 1);
}

TEST(SampledSource, LeakedCounterDoesNotCrashAtExit) {
  SimGpu gpu;
  // Never destroyed: its thread runs until the process exits, which must stay clean.
  static auto* leaked = new PeakCounter(0, Source::sampled);
  EXPECT_EQ(leaked->source(), Source::sampled);
}

TEST(SampledSource, StaticCounterDestroyedAtExit) {
  SimGpu gpu;
  static PeakCounter at_exit(0, Source::sampled);
  EXPECT_EQ(at_exit.source(), Source::sampled);
}

}  // namespace
}  // namespace gpumem
