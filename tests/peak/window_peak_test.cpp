#include "gpumem/internal/window_peak.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "gpumem/memory.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::detail {
namespace {

using namespace std::chrono_literals;
using testing::MiB;

void run_workload(const std::string& script) {
  std::string command = testing::sim_path("gpumem-sim") + " workload '" + script + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(WindowPeak, HoldsASpikeForTheWindowWithoutResetsOnRead) {
  testing::SimGpu gpu;
  WindowPeak peaks({0, 1}, 2s, 1ms);
  // Held for 100 ms, a hundred samples long: the sampler cannot miss it.
  run_workload("device 0; spike 512MiB 100ms");
  auto used = gpu_mem_get_bytes(0);
  ASSERT_TRUE(used);
  EXPECT_LT(used->used, 512 * MiB);
  auto first = peaks.peak(0);
  auto second = peaks.peak(0);
  ASSERT_TRUE(first);
  EXPECT_GE(*first, static_cast<std::int64_t>(512 * MiB));
  EXPECT_EQ(first, second);
  auto other = peaks.peak(1);
  ASSERT_TRUE(other);
  EXPECT_LT(*other, static_cast<std::int64_t>(512 * MiB));
}

TEST(WindowPeak, ForgetsASpikeOnceTheWindowHasPassed) {
  testing::SimGpu gpu;
  // Long enough that the spike is still in the window once the workload's process has gone,
  // even on a loaded machine under a sanitizer.
  WindowPeak peaks({0}, 2s, 1ms);
  run_workload("device 0; spike 256MiB 100ms");
  ASSERT_GE(peaks.peak(0).value_or(0), static_cast<std::int64_t>(256 * MiB));
  // The window plus one bucket, with room to spare for a loaded machine.
  std::optional<std::int64_t> peak;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(100ms);
    peak = peaks.peak(0);
    if (peak.value_or(0) < static_cast<std::int64_t>(256 * MiB)) break;
  }
  EXPECT_LT(peak.value_or(-1), static_cast<std::int64_t>(256 * MiB));
  EXPECT_GE(peak.value_or(-1), 0);
}

TEST(WindowPeak, AnUnknownIndexHasNoPeak) {
  testing::SimGpu gpu;
  WindowPeak peaks({0}, 1s, 1ms);
  EXPECT_FALSE(peaks.peak(5));
}

TEST(WindowPeak, HasAPeakAsSoonAsItIsMade) {
  testing::SimGpu gpu;
  // Samples an hour apart: only the one taken before the constructor returns is there.
  WindowPeak peaks({0}, 10h, 1h);
  const auto used = gpu_mem_get_bytes(0);
  ASSERT_TRUE(used);
  EXPECT_EQ(peaks.peak(0), static_cast<std::int64_t>(used->used));
}

TEST(WindowPeak, TakesInAReadingNotedFromElsewhere) {
  testing::SimGpu gpu;
  WindowPeak peaks({0}, 10h, 1h);
  const std::int64_t above = peaks.peak(0).value_or(0) + static_cast<std::int64_t>(64 * MiB);
  peaks.note(0, above);
  EXPECT_EQ(peaks.peak(0), above);
  peaks.note(0, 0);  // a lower reading lowers nothing
  EXPECT_EQ(peaks.peak(0), above);
}

TEST(WindowPeak, ADeviceThatCannotBeReadHasNoPeak) {
  testing::SimGpu gpu;
  WindowPeak peaks({7}, 1s, 1ms);  // the simulator has two
  EXPECT_FALSE(peaks.peak(0));
}

}  // namespace
}  // namespace gpumem::detail
