// The peak engine alone: exact sequential figures, overlapping counters, and many threads
// starting, resetting, reading and destroying counters while events stream in.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#include "peak/channel.hpp"

namespace gpumem::peak {
namespace {

TEST(Channel, CounterSeesEveryAllocationAndFreeToTheByte) {
  Channel channel;
  CounterSlot slot;
  channel.attach(slot);
  for (std::int64_t bytes = 1; bytes <= 1000; ++bytes) {
    channel.restart(slot);
    channel.add(bytes);
    channel.add(-bytes);
    const LevelReading reading = channel.read(slot);
    ASSERT_EQ(reading.peak - reading.start, bytes);
    ASSERT_EQ(reading.current, reading.start);
  }
  channel.detach(slot);
}

TEST(Channel, OverlappingCountersKeepTheirOwnPeaks) {
  Channel channel;
  CounterSlot outer, inner, late;
  channel.attach(outer);  // level 0
  channel.add(100);       // 100
  channel.attach(inner);  // starts at 100
  channel.add(50);        // 150: both see it
  channel.add(-50);       // 100
  channel.attach(late);   // starts at 100, after the 150 spike
  channel.detach(inner);  // not nested: the middle one ends first
  channel.add(20);        // 120
  channel.add(-120);      // 0

  const LevelReading o = channel.read(outer);
  EXPECT_EQ(o.start, 0);
  EXPECT_EQ(o.peak, 150);
  EXPECT_EQ(o.current, 0);
  const LevelReading l = channel.read(late);
  EXPECT_EQ(l.start, 100);
  EXPECT_EQ(l.peak, 120);
  EXPECT_EQ(l.current, 0);

  channel.restart(outer);  // a reset forgets the old peak for this counter only
  channel.add(5);
  channel.add(-5);
  EXPECT_EQ(channel.read(outer).peak, 5);
  EXPECT_EQ(channel.read(late).peak, 120);
  channel.detach(outer);
  channel.detach(late);
  EXPECT_EQ(channel.live_counters(), 0u);
}

TEST(Channel, AbsoluteLevelsFromASampler) {
  Channel channel;
  channel.set_level(1000);
  CounterSlot slot;
  channel.attach(slot);
  channel.set_level(4000);
  channel.set_level(2000);
  const LevelReading reading = channel.read(slot);
  EXPECT_EQ(reading.start, 1000);
  EXPECT_EQ(reading.peak, 4000);
  EXPECT_EQ(reading.current, 2000);
  channel.detach(slot);
}

TEST(Channel, PeakNeverBelowStartOrCurrent) {
  Channel channel;
  CounterSlot slot;
  channel.add(500);
  channel.attach(slot);
  channel.add(-300);  // frees below the start
  LevelReading reading = channel.read(slot);
  EXPECT_EQ(reading.start, 500);
  EXPECT_EQ(reading.current, 200);
  EXPECT_EQ(reading.peak, 500);
  channel.detach(slot);
}

// One thread spikes by a distinct size each round and checks its own counter to the byte while
// other threads churn counters on the same channel (start, reset, read, destroy mid-flight).
TEST(Channel, ExactUnderConcurrentCheckpoints) {
  Channel channel;
  std::atomic<bool> done{false};
  std::vector<std::thread> churners;
  for (int t = 0; t < 4; ++t) {
    churners.emplace_back([&] {
      while (!done.load()) {
        std::vector<std::unique_ptr<CounterSlot>> slots;
        for (int i = 0; i < 8; ++i) {
          slots.push_back(std::make_unique<CounterSlot>());
          channel.attach(*slots.back());
        }
        for (auto& slot : slots) channel.restart(*slot);
        for (auto& slot : slots) {
          const LevelReading reading = channel.read(*slot);
          EXPECT_GE(reading.peak, reading.start);
          EXPECT_GE(reading.peak, reading.current);
        }
        for (auto& slot : slots) channel.detach(*slot);
      }
    });
  }
  CounterSlot mine;
  channel.attach(mine);
  for (std::int64_t bytes = 1; bytes <= 20000; ++bytes) {
    channel.restart(mine);
    channel.add(bytes);
    channel.add(-bytes);
    const LevelReading reading = channel.read(mine);
    ASSERT_EQ(reading.peak - reading.start, bytes);
    ASSERT_EQ(reading.current, reading.start);
  }
  done = true;
  for (auto& thread : churners) thread.join();
  channel.detach(mine);
}

// An allocation moved the level before a counter's start but raised the peak after it (its
// thread was preempted between the two atomics), while another thread's free lowered the level:
// the late counter must not report the level of before its start; the early one must.
TEST(Channel, NoCounterSeesAPeakMadeBeforeItStarted) {
  Channel channel;
  CounterSlot early, late;
  channel.attach(early);                          // level 0
  channel.add(100);                               // 100
  const Channel::Step racing = channel.move(50);  // 150, not yet settled
  channel.add(-100);                              // 50
  channel.attach(late);                           // starts at 50
  channel.settle(racing);                         // the raise of 150 arrives now
  channel.add(10);                                // 60: after both starts

  const LevelReading l = channel.read(late);
  EXPECT_EQ(l.start, 50);
  EXPECT_EQ(l.peak, 60);
  EXPECT_EQ(l.current, 60);
  const LevelReading e = channel.read(early);
  EXPECT_EQ(e.start, 0);
  EXPECT_EQ(e.peak, 150);
  channel.detach(early);
  channel.detach(late);
}

// The same race across several checkpoints: the late raise reaches every counter that was live
// in its epoch (started before the allocation), and none started after it.
TEST(Channel, ALateRaiseReachesExactlyTheCountersOfItsEpoch) {
  Channel channel;
  CounterSlot before, during, after;
  channel.attach(before);
  channel.add(10);
  channel.attach(during);                        // starts at 10
  const Channel::Step racing = channel.move(5);  // 15, in `during`'s epoch
  channel.add(-15);                              // 0
  channel.attach(after);                         // starts at 0
  channel.restart(before);                       // another checkpoint: restarts at 0
  channel.settle(racing);

  EXPECT_EQ(channel.read(during).peak, 15);
  EXPECT_EQ(channel.read(after).peak, 0);
  EXPECT_EQ(channel.read(before).peak, 0);  // reset after the allocation
  channel.detach(before);
  channel.detach(during);
  channel.detach(after);
}

TEST(Channel, LevelsKeepTheirSignAndRange) {
  Channel channel;
  CounterSlot slot;
  channel.attach(slot);
  channel.add(-(std::int64_t{1} << 40));  // a free of a block older than the counter
  channel.add(Channel::kLevelRange - 1 + (std::int64_t{1} << 40));
  const LevelReading reading = channel.read(slot);
  EXPECT_EQ(reading.current, Channel::kLevelRange - 1);
  EXPECT_EQ(reading.peak, Channel::kLevelRange - 1);
  channel.set_level(-7);
  EXPECT_EQ(channel.level(), -7);
  channel.detach(slot);
}

// Spikes from several threads while counters start, reset and read on others: every reading is
// consistent, and no counter's peak exceeds its start plus what could be allocated after it.
TEST(Channel, SpikesRacingWithCheckpointsStayWithinWhatHappenedAfterTheStart) {
  Channel channel;
  constexpr std::int64_t kSpikes[] = {1000, 1};
  CounterSlot whole;  // started before every spike
  channel.attach(whole);
  std::atomic<bool> done{false};
  std::vector<std::thread> spikers;
  for (const std::int64_t size : kSpikes) {
    spikers.emplace_back([&, size] {
      do {
        channel.add(size);
        channel.add(-size);
      } while (!done.load(std::memory_order_relaxed));
    });
  }
  for (int i = 0; i < 20000; ++i) {
    CounterSlot slot;
    channel.attach(slot);
    const LevelReading reading = channel.read(slot);
    ASSERT_GE(reading.peak, reading.start);
    ASSERT_GE(reading.peak, reading.current);
    ASSERT_LE(reading.peak, reading.start + 1001);
    ASSERT_LE(reading.peak, 1001);
    channel.detach(slot);
  }
  done = true;
  for (auto& thread : spikers) thread.join();
  EXPECT_EQ(channel.level(), 0);
  EXPECT_GE(channel.read(whole).peak, 1000);  // every spiker spiked at least once
  channel.detach(whole);
}

// Many threads allocate, hold at a barrier, then free: counters started before see the exact
// sum; counters started by any thread while they hold see the held level as their start.
TEST(Channel, ManyThreadsHoldingAtOnceSumExactly) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  Channel channel;
  CounterSlot whole;
  channel.attach(whole);
  CounterSlot per_round;
  channel.attach(per_round);
  std::barrier sync(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::int64_t bytes = 1 + t;  // 1..8: the sum is 36
      for (int round = 0; round < kRounds; ++round) {
        CounterSlot own;
        channel.attach(own);
        channel.add(bytes);
        sync.arrive_and_wait();  // all hold
        sync.arrive_and_wait();  // main has read
        channel.add(-bytes);
        const LevelReading reading = channel.read(own);
        EXPECT_GE(reading.peak - reading.start, bytes);
        channel.detach(own);
        sync.arrive_and_wait();  // all freed
        sync.arrive_and_wait();  // main has reset
      }
    });
  }
  for (int round = 0; round < kRounds; ++round) {
    sync.arrive_and_wait();
    CounterSlot started_while_held;
    channel.attach(started_while_held);
    EXPECT_EQ(channel.level(), 36);
    EXPECT_EQ(channel.read(whole).peak, 36);
    EXPECT_EQ(channel.read(per_round).peak - channel.read(per_round).start, 36);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    const LevelReading held = channel.read(started_while_held);
    EXPECT_EQ(held.start, 36);
    EXPECT_EQ(held.peak, 36);
    EXPECT_EQ(held.current, 0);
    channel.detach(started_while_held);
    channel.restart(per_round);
    sync.arrive_and_wait();
  }
  for (auto& thread : threads) thread.join();
  const LevelReading total = channel.read(whole);
  EXPECT_EQ(total.peak, 36);
  EXPECT_EQ(total.current, 0);
  channel.detach(whole);
  channel.detach(per_round);
}

// Free-running threads with counters everywhere: the invariants hold, and the end is exact.
TEST(Channel, FreeRunningThreadsEndExactly) {
  constexpr int kThreads = 6;
  Channel channel;
  CounterSlot whole;
  channel.attach(whole);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CounterSlot own;
      channel.attach(own);
      for (int i = 0; i < 20000; ++i) {
        const std::int64_t bytes = 1 + (i + t) % 97;
        channel.add(bytes);
        channel.add(-bytes);
        if (i % 1000 == 0) {
          const LevelReading reading = channel.read(own);
          EXPECT_GE(reading.peak, reading.current);
          EXPECT_GE(reading.peak - reading.start, 0);
          channel.restart(own);
        }
      }
      channel.detach(own);
    });
  }
  for (auto& thread : threads) thread.join();
  const LevelReading total = channel.read(whole);
  EXPECT_EQ(total.current, 0);
  EXPECT_GE(total.peak, 97);
  EXPECT_LE(total.peak, 97 * kThreads);
  channel.detach(whole);
}

}  // namespace
}  // namespace gpumem::peak
