#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "peak/address_map.hpp"

namespace gpumem::peak {
namespace {

TEST(AddressMap, InsertFindErase) {
  AddressMap map;
  map.insert(0x7f0000000000, {4096, 1, false});
  map.insert(0x7f0000001000, {1, 0, true});
  ASSERT_TRUE(map.find(0x7f0000000000));
  EXPECT_EQ(map.find(0x7f0000000000)->size, 4096u);
  EXPECT_EQ(map.find(0x7f0000000000)->device, 1);
  EXPECT_TRUE(map.find(0x7f0000001000)->managed);
  EXPECT_FALSE(map.find(0x1234));
  EXPECT_EQ(map.erase(0x7f0000000000)->size, 4096u);
  EXPECT_FALSE(map.erase(0x7f0000000000));
  EXPECT_EQ(map.size(), 1u);
  map.clear();
  EXPECT_EQ(map.size(), 0u);
}

TEST(AddressMap, ThreadsOnDistinctBlocks) {
  AddressMap map;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&map, t] {
      for (std::uint64_t i = 0; i < 5000; ++i) {
        const std::uint64_t address = (static_cast<std::uint64_t>(t) << 40) | ((i + 1) << 9);
        map.insert(address, {i + 1, t, false});
        ASSERT_EQ(map.erase(address)->size, i + 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(map.size(), 0u);
}

// Threads that grow and shrink the same shards' tables at once: every block is found with its own
// size and device, and the tables go back to 16 slots a shard. Shards are shared (64 of them,
// 20,000 blocks a thread), so threads also meet on a shard's lock, whose waiter takes the whole
// path (the common path declines to wait); what is asserted holds whichever path each call took.
TEST(AddressMap, ThreadsGrowingAndShrinkingSharedTablesKeepEveryBlock) {
  AddressMap map;
  constexpr int kThreads = 4;
  constexpr std::uint64_t kBlocks = 20'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&map, t] {
      for (int round = 0; round < 3; ++round) {
        for (std::uint64_t i = 1; i <= kBlocks; ++i) {
          map.insert((i * kThreads + static_cast<std::uint64_t>(t)) << 9, {i * 7 + 1, t, false});
        }
        for (std::uint64_t i = 1; i <= kBlocks; ++i) {
          const auto block = map.find((i * kThreads + static_cast<std::uint64_t>(t)) << 9);
          ASSERT_TRUE(block) << t << " " << i;
          ASSERT_EQ(block->size, i * 7 + 1);
          ASSERT_EQ(block->device, t);
        }
        for (std::uint64_t i = 1; i <= kBlocks; ++i) {
          const auto block = map.erase((i * kThreads + static_cast<std::uint64_t>(t)) << 9);
          ASSERT_TRUE(block) << t << " " << i;
          ASSERT_EQ(block->size, i * 7 + 1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_LE(map.memory_bytes(), 64u * 16 * 16);
}

// The open-addressing table against a reference map, through growth and the deletions that
// shift clusters back (addresses collide in shards and wrap around tables).
TEST(AddressMap, AgreesWithAReferenceMapThroughChurn) {
  AddressMap map;
  std::unordered_map<std::uint64_t, std::uint64_t> reference;
  std::mt19937_64 random(42);
  for (int step = 0; step < 200000; ++step) {
    const std::uint64_t address = ((random() % 4096) + 1) << 9;
    if (random() % 3 != 0) {
      const std::uint64_t size = random() % 1000 + 1;
      map.insert(address, {size, 0, false});
      reference[address] = size;
    } else {
      const auto erased = map.erase(address);
      const auto expected = reference.find(address);
      ASSERT_EQ(erased.has_value(), expected != reference.end()) << "step " << step;
      if (erased) {
        ASSERT_EQ(erased->size, expected->second);
        reference.erase(expected);
      }
    }
  }
  ASSERT_EQ(map.size(), reference.size());
  for (const auto& [address, size] : reference) {
    ASSERT_TRUE(map.find(address));
    EXPECT_EQ(map.find(address)->size, size);
  }
  map.insert(0, {1, 0, false});  // no block lives at 0
  EXPECT_FALSE(map.find(0));
}

TEST(AddressMap, KeepsEveryFieldOfABlockAtItsLimits) {
  AddressMap map;
  const std::uint64_t largest = (std::uint64_t{1} << 55) - 1;
  map.insert(0x200, {largest, 63, true});
  map.insert(0x400, {1, -1, false});
  map.insert(0x600, {256, 0, true});
  EXPECT_EQ(map.find(0x200)->size, largest);
  EXPECT_EQ(map.find(0x200)->device, 63);
  EXPECT_TRUE(map.find(0x200)->managed);
  EXPECT_EQ(map.find(0x400)->device, -1);
  EXPECT_FALSE(map.find(0x400)->managed);
  const auto erased = map.erase(0x600);
  ASSERT_TRUE(erased);
  EXPECT_EQ(erased->size, 256u);
  EXPECT_TRUE(erased->managed);
}

// The tables follow the live blocks down: freed blocks give their memory back.
TEST(AddressMap, ShrinksAsItsBlocksAreFreed) {
  AddressMap map;
  EXPECT_EQ(map.memory_bytes(), 0u);
  constexpr std::uint64_t kBlocks = 100'000;
  for (std::uint64_t i = 1; i <= kBlocks; ++i) map.insert(i << 21, {i, 0, false});
  const std::size_t full = map.memory_bytes();
  EXPECT_GE(full, kBlocks * 16 * 8 / 3);   // 16-byte slots, at most 3/8 full
  EXPECT_LE(full, kBlocks * 16 * 16 / 3);  // and at least 3/16 full once grown
  for (std::uint64_t i = 1; i <= kBlocks - 1000; ++i) ASSERT_EQ(map.erase(i << 21)->size, i);
  EXPECT_LT(map.memory_bytes(), full / 20);
  for (std::uint64_t i = kBlocks - 999; i <= kBlocks; ++i) ASSERT_EQ(map.find(i << 21)->size, i);
  for (std::uint64_t i = kBlocks - 999; i <= kBlocks; ++i) map.erase(i << 21);
  EXPECT_LE(map.memory_bytes(), 64u * 16 * 16);  // 16 slots a shard, kept for the next block
  EXPECT_EQ(map.size(), 0u);
}

// Growth and shrinking in the middle of churn, against a reference map: the population swings
// between a few blocks and thousands, so every shard's table doubles and halves many times
// while clusters shift back over erased slots.
TEST(AddressMap, AgreesWithAReferenceMapWhileItGrowsAndShrinks) {
  AddressMap map;
  std::unordered_map<std::uint64_t, std::uint64_t> reference;
  std::mt19937_64 random(7);
  for (int phase = 0; phase < 8; ++phase) {
    const bool growing = phase % 2 == 0;
    for (int step = 0; step < 30000; ++step) {
      const std::uint64_t address = ((random() % 20000) + 1) << 8;
      if (growing == (random() % 4 != 0)) {
        const std::uint64_t size = random() % 100000 + 1;
        map.insert(address, {size, static_cast<int>(size % 8), size % 3 == 0});
        reference[address] = size;
      } else {
        const auto erased = map.erase(address);
        const auto expected = reference.find(address);
        ASSERT_EQ(erased.has_value(), expected != reference.end()) << phase << " " << step;
        if (erased) {
          ASSERT_EQ(erased->size, expected->second);
          ASSERT_EQ(erased->device, static_cast<int>(expected->second % 8));
          reference.erase(expected);
        }
      }
    }
    ASSERT_EQ(map.size(), reference.size()) << "phase " << phase;
    std::size_t seen = 0;
    map.for_each([&](std::uint64_t key, const Block& block) {
      ++seen;
      const auto expected = reference.find(key);
      ASSERT_NE(expected, reference.end());
      EXPECT_EQ(block.size, expected->second);
    });
    EXPECT_EQ(seen, reference.size());
  }
}

}  // namespace
}  // namespace gpumem::peak
