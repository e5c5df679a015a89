// Reconciliation while other threads allocate: NVML's figure for the process is taken into the
// footprint only from a reading that no traced call of another thread overlapped, so a block
// the driver showed during the reading is never also taken for context memory (docs/peaks.md,
// "Why the reconciliation cannot double count").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gpumem/allocate.hpp"
#include "gpumem/trace.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using testing::mib;
using testing::MiB;
using testing::SimGpu;

// A thread allocates and frees 64 MiB every 2 ms while a trace is read again and again; NVML's
// process list takes 10 ms (the simulator's `nvml_process_delay`) and shows the list of its
// midpoint, so a reading often shows the block although the level is back where it was at both
// of its ends. The trace's peak is the context and the 1 MiB block plus one spike, never two.
TEST(FootprintRace, ASpikeInsideANvmlReadingIsNotTakenForContext) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 100}]})",
             "nvml_process_delay=10000");
  DeviceAllocation kept = device_allocate(1 * MiB, 0);  // the context first
  ASSERT_TRUE(kept.valid());
  TraceOptions options;
  options.device = 0;
  options.source = Source::exact;
  options.silent = true;
  options.no_cache = false;
  GPUMemTrace trace(options);
  ASSERT_EQ(trace.data_bytes().source, Source::exact);
  ASSERT_EQ(trace.data_bytes().start, mib(101));

  std::atomic<bool> stop{false};
  std::atomic<int> spikes{0};
  std::thread spiker([&] {
    while (!stop.load()) {
      {
        DeviceAllocation spike = device_allocate(64 * MiB, 0);
        ASSERT_TRUE(spike.valid());
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      spikes.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (int read = 0; read < 60; ++read) {
    const TraceBytes bytes = trace.data_bytes();
    ASSERT_LE(bytes.peak, mib(101 + 64)) << "read " << read << ", " << spikes.load() << " spikes";
  }
  stop.store(true);
  spiker.join();
  EXPECT_GT(spikes.load(), 60);
  const TraceBytes bytes = trace.data_bytes();
  EXPECT_EQ(bytes.peak, mib(101 + 64));
  EXPECT_EQ(bytes.end, mib(101));
}

}  // namespace
}  // namespace gpumem
