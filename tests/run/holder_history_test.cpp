// The monitor's history of NVML's process lists (holder_history.hpp): what an out-of-memory
// failure is told about the device's other processes.
#include "run/holder_history.hpp"

#include <gtest/gtest.h>

namespace gpumem::run {
namespace {

constexpr std::int64_t kMs = 1'000'000;

std::vector<ProcessMemory> list(std::initializer_list<std::pair<unsigned, std::uint64_t>> held) {
  std::vector<ProcessMemory> processes;
  for (const auto& [pid, bytes] : held) processes.push_back({pid, bytes});
  return processes;
}

TEST(HolderHistory, AnUnchangedListExtendsTheReadingBeforeIt) {
  HolderHistory history;
  history.add(0, 10 * kMs, list({{7, 100}, {9, 200}}));
  history.add(0, 20 * kMs, list({{9, 200}, {7, 100}}));  // NVML's order is no promise
  history.add(0, 30 * kMs, list({{7, 100}, {9, 200}}));
  ASSERT_EQ(history.readings(0), 1u);
  const auto at = history.at(0, 25 * kMs);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->reading->first_ns, 10 * kMs);
  EXPECT_EQ(at->reading->last_ns, 30 * kMs);
  EXPECT_EQ(at->age_s, 0.0);  // the same list before and after the moment
  ASSERT_EQ(at->reading->listed.size(), 2u);
  EXPECT_EQ(at->reading->listed[1].used_bytes, 200u);
}

// A quiet tick of the monitor reads no list: the newest one stood until then, and a failure
// at that moment is told so with no age.
TEST(HolderHistory, AListThatStillStandsExtendsTheNewestReadingOnly) {
  HolderHistory history;
  history.still(0, 5 * kMs);  // never read: nothing to extend
  EXPECT_EQ(history.readings(0), 0u);
  history.add(0, 10 * kMs, list({{7, 100}}));
  history.add(0, 20 * kMs, list({{7, 300}}));
  history.still(0, 40 * kMs);
  ASSERT_EQ(history.readings(0), 2u);
  const auto at = history.at(0, 35 * kMs);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->reading->listed[0].used_bytes, 300u);
  EXPECT_EQ(at->reading->first_ns, 20 * kMs);
  EXPECT_EQ(at->reading->last_ns, 40 * kMs);
  EXPECT_EQ(at->age_s, 0.0);
  const auto older = history.at(0, 15 * kMs);
  ASSERT_TRUE(older);
  EXPECT_EQ(older->reading->last_ns, 10 * kMs);  // the reading before is left as it was
  history.still(0, 30 * kMs);                    // times do not go back
  EXPECT_EQ(history.at(0, 35 * kMs)->reading->last_ns, 40 * kMs);
}

TEST(HolderHistory, AMomentGetsTheNewestListBeforeItElseTheFirstAfter) {
  HolderHistory history;
  history.add(0, 10 * kMs, list({{7, 100}}));
  history.add(0, 20 * kMs, list({{7, 300}}));
  history.add(1, 15 * kMs, list({{8, 50}}));
  const auto between = history.at(0, 17 * kMs);
  ASSERT_TRUE(between);
  EXPECT_EQ(between->reading->listed[0].used_bytes, 100u);
  EXPECT_NEAR(between->age_s, 0.007, 1e-9);
  const auto on = history.at(0, 20 * kMs);
  ASSERT_TRUE(on);
  EXPECT_EQ(on->reading->listed[0].used_bytes, 300u);
  EXPECT_EQ(on->age_s, 0.0);
  const auto early = history.at(0, 4 * kMs);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->reading->listed[0].used_bytes, 100u);
  EXPECT_NEAR(early->age_s, -0.006, 1e-9);  // read only after the moment
  const auto late = history.at(0, 50 * kMs);
  ASSERT_TRUE(late);
  EXPECT_NEAR(late->age_s, 0.030, 1e-9);
  // Each device its own; a device never read has no answer.
  EXPECT_EQ(history.at(1, 16 * kMs)->reading->listed[0].pid, 8u);
  EXPECT_FALSE(history.at(2, 16 * kMs));
}

TEST(HolderHistory, ALongRunThinsEvenlyAndKeepsItsFirstAndNewestReadings) {
  HolderHistory history(8);
  for (std::int64_t sample = 0; sample < 1000; ++sample)
    history.add(0, sample * kMs, list({{7, static_cast<std::uint64_t>(sample)}}));
  EXPECT_LE(history.readings(0), 8u);
  EXPECT_GE(history.readings(0), 4u);
  const auto first = history.at(0, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->reading->listed[0].used_bytes, 0u);
  const auto newest = history.at(0, 999 * kMs);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->reading->listed[0].used_bytes, 999u);
  EXPECT_EQ(newest->age_s, 0.0);
  // Any moment still gets a list read at or before it, and says how old it is.
  for (std::int64_t moment = 0; moment < 1000; moment += 37) {
    const auto at = history.at(0, moment * kMs);
    ASSERT_TRUE(at);
    EXPECT_LE(at->reading->first_ns, moment * kMs);
    // The list read then (each sample's bytes are its time in ms).
    EXPECT_EQ(*at->reading->listed[0].used_bytes * kMs,
              static_cast<std::uint64_t>(at->reading->first_ns));
    EXPECT_GE(at->age_s, 0.0);
  }
}

}  // namespace
}  // namespace gpumem::run
