// Which threads are inside a traced driver call (src/peak/in_flight.hpp): what reconciliation
// asks before it trusts an NVML reading.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "peak/in_flight.hpp"

namespace gpumem {
namespace {

// The mechanism: a call another thread entered and left between two readings of the in-flight
// table changes the generation, though nothing is in flight at either reading.
TEST(InFlight, ACallThatCameAndWentBetweenTwoReadingsIsSeen) {
  const std::optional<std::uint64_t> before = peak::in_flight::quiet_generation();
  ASSERT_TRUE(before);
  std::thread([] {
    peak::in_flight::enter();
    EXPECT_FALSE(peak::in_flight::quiet_generation() == std::nullopt) << "its own call is its own";
    EXPECT_TRUE(peak::in_flight::leave());
    EXPECT_FALSE(peak::in_flight::leave()) << "an EXIT with no ENTER is not one";
  }).join();
  const std::optional<std::uint64_t> after = peak::in_flight::quiet_generation();
  ASSERT_TRUE(after);
  EXPECT_NE(*after, *before);
  // A call in flight: no reading is quiet until it leaves.
  std::atomic<int> step{0};
  std::thread in_flight([&] {
    peak::in_flight::enter();
    step.store(1);
    while (step.load() != 2) std::this_thread::yield();
    peak::in_flight::leave();
  });
  while (step.load() != 1) std::this_thread::yield();
  EXPECT_EQ(peak::in_flight::quiet_generation(), std::nullopt);
  step.store(2);
  in_flight.join();
  EXPECT_NE(peak::in_flight::quiet_generation(), std::nullopt);
}

}  // namespace
}  // namespace gpumem
