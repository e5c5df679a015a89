// The ground floor on its own: the diagnostics log, environment reading and the clocks, with no
// driver loaded.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/environment.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::support {
namespace {

using namespace std::chrono_literals;

TEST(DiagnosticsLog, KeepsEachDistinctMessageOnceOldestFirst) {
  EXPECT_TRUE(gpumem::diagnostics().empty());
  EXPECT_EQ(gpumem::last_diagnostic(), "");
  record_diagnostic("NVML not found");
  record_diagnostic("GPU 1 lost (NVML_ERROR_GPU_IS_LOST)");
  record_diagnostic("NVML not found");
  record_diagnostic("");  // ignored
  EXPECT_EQ(gpumem::diagnostics(),
            (std::vector<std::string>{"NVML not found", "GPU 1 lost (NVML_ERROR_GPU_IS_LOST)"}));
  EXPECT_EQ(gpumem::last_diagnostic(), "GPU 1 lost (NVML_ERROR_GPU_IS_LOST)");
}

// The log is the process's: counts only this test's own messages, whatever ran before it.
TEST(DiagnosticsLog, ThreadsRecordingTheSameMessagesKeepOneEach) {
  const auto own = [] {
    std::vector<std::string> mine;
    for (const std::string& message : gpumem::diagnostics())
      if (message.starts_with("threaded message ")) mine.push_back(message);
    return mine;
  };
  ASSERT_TRUE(own().empty());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 200; ++i) record_diagnostic("threaded message " + std::to_string(i % 10));
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::string> mine = own();
  std::sort(mine.begin(), mine.end());
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) expected.push_back("threaded message " + std::to_string(i));
  EXPECT_EQ(mine, expected);
}

TEST(Environment, AnEmptyVariableCountsAsUnset) {
  ::setenv("GPUMEM_SUPPORT_TEST", "/opt/lib/libnvidia-ml.so.1", 1);
  EXPECT_STREQ(env_value("GPUMEM_SUPPORT_TEST"), "/opt/lib/libnvidia-ml.so.1");
  EXPECT_EQ(env_text("GPUMEM_SUPPORT_TEST"), "/opt/lib/libnvidia-ml.so.1");
  ::setenv("GPUMEM_SUPPORT_TEST", "", 1);
  EXPECT_EQ(env_value("GPUMEM_SUPPORT_TEST"), nullptr);
  EXPECT_EQ(env_text("GPUMEM_SUPPORT_TEST"), "");
  ::unsetenv("GPUMEM_SUPPORT_TEST");
  EXPECT_EQ(env_value("GPUMEM_SUPPORT_TEST"), nullptr);
  EXPECT_EQ(env_text("GPUMEM_SUPPORT_TEST"), "");
}

// Bracketed by clock_gettime(CLOCK_REALTIME), the clock system_clock reads. Not by time(): it
// reads the kernel's coarse clock, which lags CLOCK_REALTIME by up to a tick, so a time() taken
// after may still name the previous second.
TEST(Clock, UnixTimeIsTheSystemClockInMilliseconds) {
  const auto realtime_ms = [] {
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1'000'000;
  };
  const std::int64_t before = realtime_ms();
  const std::int64_t now = unix_time_ms();
  const std::int64_t after = realtime_ms();
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
  EXPECT_GT(now, 1'600'000'000'000LL);  // milliseconds, not seconds or microseconds
  EXPECT_LT(now, 100'000'000'000'000LL);
}

// Processes compare monotonic_ns with what others read through clock_gettime: the same clock.
TEST(Clock, MonotonicIsClockMonotonic) {
  timespec before{}, after{};
  ::clock_gettime(CLOCK_MONOTONIC, &before);
  const std::int64_t now = monotonic_ns();
  ::clock_gettime(CLOCK_MONOTONIC, &after);
  EXPECT_GE(now, before.tv_sec * 1'000'000'000LL + before.tv_nsec);
  EXPECT_LE(now, after.tv_sec * 1'000'000'000LL + after.tv_nsec);
}

TEST(Cadence, TicksAtASteadyRateWhateverTheWorkTakes) {
  const SteadyClock::time_point start{};
  Cadence cadence(start);
  EXPECT_EQ(cadence.next(), start);
  // Work that takes 3 ms of each 10 ms does not stretch the period.
  EXPECT_EQ(cadence.advance(10ms, start + 3ms), start + 10ms);
  EXPECT_EQ(cadence.advance(10ms, start + 13ms), start + 20ms);
  EXPECT_EQ(cadence.next(), start + 20ms);
}

TEST(Cadence, AfterAStallGoesOnAtOnceWithoutABurst) {
  const SteadyClock::time_point start{};
  Cadence cadence(start);
  // The work (or a suspended machine) took 35 ms: the next tick is now, not three late ones.
  EXPECT_EQ(cadence.advance(10ms, start + 35ms), start + 35ms);
  EXPECT_EQ(cadence.advance(10ms, start + 36ms), start + 45ms);
}

}  // namespace
}  // namespace gpumem::support
