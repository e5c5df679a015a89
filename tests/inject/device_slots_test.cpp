// The counters file's device slots (named by UUID, claimed lock-free) and its timeline ring.
#include "gpumem/internal/run_counters.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace gpumem::run {
namespace {

Uuid uuid_of(unsigned char last) {
  Uuid uuid{};
  uuid[0] = 0xab;
  uuid[15] = last;
  return uuid;
}

TEST(RunCounters, ParsesNvmlsUuidTexts) {
  const auto gpu = parse_uuid("GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01");
  ASSERT_TRUE(gpu);
  EXPECT_EQ((*gpu)[0], 0x1b);
  EXPECT_EQ((*gpu)[15], 0x01);
  EXPECT_EQ(parse_uuid("MIG-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01"), gpu);
  EXPECT_FALSE(parse_uuid("MIG-GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01/1/0"));
  EXPECT_FALSE(parse_uuid("GPU-1b0a"));
}

TEST(RunCounters, ProcessesNamingOneDeviceAtOnceShareOneSlot) {
  auto counters = std::make_unique<RunCounters>();
  std::vector<std::thread> threads;
  std::vector<int> slots(16, -2);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      slots[static_cast<std::size_t>(i)] = find_or_claim_device(*counters, uuid_of(i % 2 ? 7 : 9));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(slots[static_cast<std::size_t>(i)], slots[i % 2]);
  EXPECT_NE(slots[0], slots[1]);
  EXPECT_EQ(find_device(*counters, uuid_of(7)), slots[1]);
  EXPECT_EQ(find_device(*counters, uuid_of(9)), slots[0]);
  EXPECT_EQ(find_device(*counters, uuid_of(8)), -1);
  for (int i = 0; i < kMaxDevices - 2; ++i)
    EXPECT_GE(find_or_claim_device(*counters, uuid_of(static_cast<unsigned char>(100 + i))), 0);
  EXPECT_EQ(find_or_claim_device(*counters, uuid_of(99)), -1);  // every slot named
}

TEST(RunCounters, TheRingDeliversEveryEventInOrderAndCountsTheOverwritten) {
  auto counters = std::make_unique<RunCounters>();
  counters->timeline = 1;
  RingReader reader;
  std::vector<std::int64_t> levels;
  auto sink = [&](int device, std::int64_t, std::int64_t level) {
    EXPECT_EQ(device, 3);
    levels.push_back(level);
  };
  for (int i = 0; i < 10; ++i) add_event(*counters, 3, 5);
  reader.drain(counters->ring, false, sink);
  EXPECT_EQ(levels, (std::vector<std::int64_t>{5, 10, 15, 20, 25, 30, 35, 40, 45, 50}));
  EXPECT_EQ(counters->devices[3].peak.load(), 50);
  EXPECT_EQ(reader.lost, 0u);
  // A lap and a half before the next drain: the oldest half lap is gone, and said so.
  levels.clear();
  const std::uint64_t more = kEventRingSize + kEventRingSize / 2;
  for (std::uint64_t i = 0; i < more; ++i) add_event(*counters, 3, 1);
  reader.drain(counters->ring, false, sink);
  EXPECT_EQ(reader.lost, kEventRingSize / 2);
  ASSERT_EQ(levels.size(), kEventRingSize);
  EXPECT_EQ(levels.back(), 50 + static_cast<std::int64_t>(more));
}

TEST(RunCounters, AnEventBeingWrittenIsReadNextTime) {
  auto counters = std::make_unique<RunCounters>();
  RingReader reader;
  int delivered = 0;
  auto sink = [&](int, std::int64_t, std::int64_t) { ++delivered; };
  append_event(counters->ring, 0, 1, 1);
  counters->ring.head.fetch_add(1);  // a writer between taking its position and finishing
  append_event(counters->ring, 0, 3, 3);
  reader.drain(counters->ring, false, sink);
  EXPECT_EQ(delivered, 1);
  reader.drain(counters->ring, true, sink);  // the last drain: its writer is gone
  EXPECT_EQ(delivered, 2);
  EXPECT_EQ(reader.lost, 1u);
}

}  // namespace
}  // namespace gpumem::run
