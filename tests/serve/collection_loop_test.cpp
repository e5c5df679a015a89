#include "collection_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace gpumem::serve {
namespace {

using namespace std::chrono_literals;

Snapshot numbered(int n) {
  Snapshot s;
  s.host = "collection-" + std::to_string(n);
  return s;
}

template <class Ready>
void wait_until(Ready ready) {
  for (int i = 0; i < 500 && !ready(); ++i) std::this_thread::sleep_for(10ms);
}

TEST(CollectionLoop, ServesTheLatestCompleteCollection) {
  std::atomic<int> calls{0};
  CollectionLoop loop([&] { return numbered(++calls); }, 10ms);
  ASSERT_TRUE(loop.wait_for_first(10s));
  wait_until([&] { return loop.latest().collections >= 3; });
  const auto latest = loop.latest();
  ASSERT_NE(latest.snapshot, nullptr);
  EXPECT_GE(latest.collections, 3u);
  EXPECT_EQ(latest.snapshot->host, "collection-" + std::to_string(latest.collections));
  EXPECT_LT(latest.age_seconds, 5.0);
}

// A driver call that hangs: scrapes still answer at once, from the last complete collection,
// and its age grows.
TEST(CollectionLoop, AHungCollectionLeavesTheLastOneServedAndAging) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  auto loop = std::make_unique<CollectionLoop>(
      [&calls, released] {
        if (++calls == 2) released.wait();  // the second collection hangs in the "driver"
        return numbered(calls);
      },
      10ms);
  ASSERT_TRUE(loop->wait_for_first(10s));
  wait_until([&] { return calls.load() == 2; });
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  const auto latest = loop->latest();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(latest.collections, 1u);
  EXPECT_EQ(latest.snapshot->host, "collection-1");
  EXPECT_GE(latest.age_seconds, 0.3);
  release.set_value();
  wait_until([&] { return loop->latest().collections >= 2; });
  EXPECT_GE(loop->latest().collections, 2u);
  EXPECT_LT(loop->latest().age_seconds, latest.age_seconds);
}

TEST(CollectionLoop, BeforeTheFirstCollectionTheAgeCountsFromTheStart) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  CollectionLoop loop(
      [released] {
        released.wait();
        return numbered(1);
      },
      10ms);
  EXPECT_FALSE(loop.wait_for_first(200ms));
  const auto latest = loop.latest();
  EXPECT_EQ(latest.snapshot, nullptr);
  EXPECT_EQ(latest.collections, 0u);
  EXPECT_GE(latest.age_seconds, 0.2);
  release.set_value();
}

}  // namespace
}  // namespace gpumem::serve
