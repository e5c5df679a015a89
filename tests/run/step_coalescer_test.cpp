// The exact timeline's coalescer: every step while they fit, then bounded memory that keeps
// every bucket's lowest and highest level at its own height and time.
#include "gpumem/internal/run_timeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace gpumem::run {
namespace {

TEST(StepCoalescer, KeepsEveryStepWhileTheyFit) {
  StepCoalescer coalescer(64);
  std::vector<Step> expected;
  for (int i = 0; i < 60; ++i) {
    const Step step{i * 1000, (i % 7) * 100};
    coalescer.add(step.time_ns, step.level);
    expected.push_back(step);
  }
  EXPECT_EQ(coalescer.bucket_ns(), 0);
  EXPECT_EQ(coalescer.steps(), expected);
}

TEST(StepCoalescer, MillionsOfEventsStayBoundedWithEveryBucketsExtremes) {
  constexpr std::size_t kMax = 4096;
  StepCoalescer coalescer(kMax);
  std::mt19937_64 random(7);
  std::vector<Step> raw;
  constexpr std::int64_t kEvents = 2'000'000;
  raw.reserve(kEvents);
  std::int64_t level = 1 << 30;
  std::size_t largest = 0;  // checked once after the loop: an assertion per event is slow
  for (std::int64_t i = 0; i < kEvents; ++i) {
    level += static_cast<std::int64_t>(random() % 2001) - 1000;
    // Rare spikes, each higher than anything near it: one 1 µs event at its own height.
    const bool spike = i % 200'000 == 123;
    const Step step{i * 1000 + static_cast<std::int64_t>(random() % 1000),
                    spike ? level + (1 << 24) + i : level};
    raw.push_back(step);
    coalescer.add(step.time_ns, step.level);
    largest = std::max(largest, coalescer.size());
  }
  ASSERT_LE(largest, kMax + 3);
  const std::vector<Step> kept = coalescer.steps();
  EXPECT_LE(kept.size(), kMax + 3);
  EXPECT_GE(kept.size(), kMax / 8);  // and still fine enough for a plot
  const std::int64_t width = coalescer.bucket_ns();
  ASSERT_GT(width, 0);
  // Per bucket, the kept steps have the raw events' extremes, and the last level.
  struct Extremes {
    std::int64_t low = INT64_MAX, high = INT64_MIN, last = 0;
  };
  std::map<std::int64_t, Extremes> expected, got;
  auto fold = [&](std::map<std::int64_t, Extremes>& into, const Step& step) {
    Extremes& bucket = into[step.time_ns / width];
    bucket.low = std::min(bucket.low, step.level);
    bucket.high = std::max(bucket.high, step.level);
    bucket.last = step.level;
  };
  for (const Step& step : raw) fold(expected, step);
  for (const Step& step : kept) fold(got, step);
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [index, bucket] : expected) {
    EXPECT_EQ(got[index].low, bucket.low) << "bucket " << index;
    EXPECT_EQ(got[index].high, bucket.high) << "bucket " << index;
    EXPECT_EQ(got[index].last, bucket.last) << "bucket " << index;
  }
  // Each spike is there at its height and its own time.
  for (const Step& step : raw) {
    if (step.level < (1 << 30) + (1 << 24)) continue;
    EXPECT_NE(std::find(kept.begin(), kept.end(), step), kept.end()) << step.level;
  }
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end(),
                             [](const Step& a, const Step& b) { return a.time_ns < b.time_ns; }));
}

TEST(StepCoalescer, ABucketShowsItsLowHighAndLastInTimeOrder) {
  StepCoalescer coalescer(64, 1000);
  coalescer.add(100, 100);
  coalescer.add(200, 150);  // a spike
  coalescer.add(300, 100);
  coalescer.add(400, 120);
  coalescer.add(1500, 90);  // the next bucket
  EXPECT_EQ(coalescer.steps(), (std::vector<Step>{{100, 100}, {200, 150}, {400, 120}, {1500, 90}}));
}

TEST(StepCoalescer, ATimeThatGoesBackIsTakenAsTheLatest) {
  StepCoalescer coalescer(64);
  coalescer.add(1000, 1);
  coalescer.add(990, 2);  // another process's clock, read a little earlier
  EXPECT_EQ(coalescer.steps(), (std::vector<Step>{{1000, 1}, {1000, 2}}));
}

}  // namespace
}  // namespace gpumem::run
