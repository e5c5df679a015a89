// The versioned block table: a held snapshot never changes, taking one copies nothing, and the
// memory follows the live blocks and the snapshots still held.
#include "attribution/block_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace {

using gpumem::attribution::BlockInfo;
using gpumem::attribution::BlockTable;
using gpumem::attribution::kNoSnapshot;
using gpumem::attribution::Snapshot;

using Contents = std::map<std::uint64_t, std::uint64_t>;  // key -> bytes

Contents contents(const BlockTable& table, Snapshot snapshot) {
  std::vector<BlockTable::Entry> entries;
  table.collect(snapshot, entries);
  Contents out;
  for (const auto& entry : entries) {
    EXPECT_TRUE(out.emplace(entry.key, entry.info.bytes).second) << "twice: " << entry.key;
  }
  return out;
}

TEST(BlockTable, ASnapshotKeepsItsBlocksWhileTheTableChanges) {
  BlockTable table;
  for (std::uint64_t key = 1; key <= 100; ++key) table.insert(key * 4096, {key, 0, 1, 0});
  const Snapshot before = table.share();
  table.erase(50 * 4096);
  table.insert(1000 * 4096, {7, 0, 2, 0});
  table.insert(10 * 4096, {99, 0, 3, 0});  // replaced
  Contents expected;
  for (std::uint64_t key = 1; key <= 100; ++key) expected[key * 4096] = key;
  EXPECT_EQ(contents(table, before), expected);
  EXPECT_EQ(table.size(), 100u);
  EXPECT_EQ(table.bytes(), 5050u - 50 - 10 + 7 + 99);
  const Snapshot after = table.share();
  EXPECT_EQ(table.count(after), 100u);
  EXPECT_EQ(contents(table, after).at(10 * 4096), 99u);
  EXPECT_EQ(contents(table, after).rbegin()->first, 1000u * 4096);
  EXPECT_EQ(table.retired(), 2u);  // the erased block and the replaced one, for `before`
  table.release(before);
  table.release(after);
  EXPECT_EQ(table.retired(), 0u);
  EXPECT_EQ(table.find(10 * 4096)->bytes, 99u);
  EXPECT_EQ(table.find(10 * 4096)->stack, 3u);
}

// 100 snapshots of 100,000 blocks, each followed by a new block: nothing is copied, and no
// block is kept twice.
TEST(BlockTable, ASnapshotCopiesNothing) {
  BlockTable table;
  constexpr std::uint64_t kBlocks = 100000;
  for (std::uint64_t key = 1; key <= kBlocks; ++key) table.insert(key << 21, {1, 0, 0, 0});
  const std::size_t live = table.memory_bytes();
  std::vector<Snapshot> snapshots;
  for (std::uint64_t i = 0; i < 100; ++i) {
    snapshots.push_back(table.share());
    table.insert((kBlocks + 1 + i) << 21, {1, 0, 0, 0});
  }
  EXPECT_EQ(table.retired(), 0u);
  EXPECT_LT(table.memory_bytes() - live, 100u * 64);
  EXPECT_EQ(table.count(snapshots.front()), kBlocks);
  EXPECT_EQ(table.count(snapshots.back()), kBlocks + 99);
  for (Snapshot snapshot : snapshots) table.release(snapshot);
}

// Freed blocks give their memory back: at once without snapshots, at the last release with.
TEST(BlockTable, FreedBlocksGiveTheirMemoryBack) {
  BlockTable table;
  constexpr std::uint64_t kBlocks = 100000;
  for (std::uint64_t key = 1; key <= kBlocks; ++key) table.insert(key << 12, {key, 0, 0, 0});
  const std::size_t full = table.memory_bytes();
  EXPECT_LE(full, kBlocks * 32 * 8 / 3);  // 32-byte slots, at least 3/8 full once grown
  for (std::uint64_t key = 1; key <= kBlocks - 100; ++key) ASSERT_TRUE(table.erase(key << 12));
  EXPECT_LT(table.memory_bytes(), full / 100);
  const Snapshot held = table.share();
  for (std::uint64_t key = kBlocks - 99; key <= kBlocks; ++key) table.erase(key << 12);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.count(held), 100u);  // the snapshot still sees them
  table.release(held);
  EXPECT_LE(table.memory_bytes(), 16u * 32);  // 16 slots, kept for the next block
}

TEST(BlockTable, EraseOfAnAbsentKeyChangesNothing) {
  BlockTable table;
  table.insert(4096, {10, 0, 0, 0});
  const Snapshot shared = table.share();
  EXPECT_FALSE(table.erase(8192));
  EXPECT_EQ(table.retired(), 0u);
  EXPECT_TRUE(table.erase(4096));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.count(shared), 1u);
  table.release(shared);
  EXPECT_EQ(table.count(kNoSnapshot), 0u);
}

TEST(BlockTable, ClearKeepsWhatAHeldSnapshotSees) {
  BlockTable table;
  table.insert(4096, {10, 0, 0, 0});
  const Snapshot shared = table.share();
  table.insert(8192, {20, 0, 0, 0});
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.bytes(), 0u);
  EXPECT_EQ(contents(table, shared), (Contents{{4096, 10}}));
  table.release(shared);
  EXPECT_EQ(table.memory_bytes(), 0u);
}

TEST(BlockTable, KeepsEveryFieldOfABlockAtItsLimits) {
  BlockTable table;
  const std::uint64_t largest = (std::uint64_t{1} << 56) - 1;
  table.insert(std::uint64_t{3} << 60 | 7, {largest, -5, 0xffffffffu, 255});
  table.insert(512, {1, INT64_MAX, 1, 0});
  const auto big = table.find(std::uint64_t{3} << 60 | 7);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->bytes, largest);
  EXPECT_EQ(big->time_ns, -5);
  EXPECT_EQ(big->stack, 0xffffffffu);
  EXPECT_EQ(big->kind, 255);
  const auto small = table.find(512);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->bytes, 1u);
  EXPECT_EQ(small->time_ns, INT64_MAX);
  EXPECT_EQ(small->stack, 1u);
  EXPECT_EQ(small->kind, 0);
  EXPECT_EQ(table.bytes(), largest + 1);
}

// Random churn against reference copies: blocks come, go and are replaced while snapshots are
// taken and released in any order, and the population swings between a handful and thousands,
// so the table grows and shrinks under held snapshots and the retired list is pruned many times.
void churn_against_copies(BlockTable& table) {
  Contents now;
  std::vector<std::pair<Snapshot, Contents>> held;
  std::mt19937_64 random(11);
  for (int phase = 0; phase < 6; ++phase) {
    const bool growing = phase % 2 == 0;
    for (int step = 0; step < 6000; ++step) {
      const std::uint64_t key = ((random() % 2000) + 1) << 9;
      const unsigned what = random() % 100;
      if (what < 2) {
        held.emplace_back(table.share(), now);
      } else if (what < 4 && !held.empty()) {
        const std::size_t pick = random() % held.size();
        ASSERT_EQ(contents(table, held[pick].first), held[pick].second) << phase << " " << step;
        table.release(held[pick].first);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick));
      } else if (what == 4) {
        table.clear();
        now.clear();
      } else if (growing == (what % 4 != 0)) {
        const std::uint64_t bytes = random() % 1000 + 1;
        table.insert(key, {bytes, 0, 0, 0});
        now[key] = bytes;
      } else {
        ASSERT_EQ(table.erase(key), now.erase(key) == 1);
      }
    }
    ASSERT_EQ(table.size(), now.size());
    for (const auto& [snapshot, copy] : held) ASSERT_EQ(contents(table, snapshot), copy);
    const Snapshot current = table.share();
    EXPECT_EQ(contents(table, current), now);
    table.release(current);
  }
  for (const auto& [snapshot, copy] : held) table.release(snapshot);
  EXPECT_EQ(table.retired(), 0u);
}

TEST(BlockTable, EverySnapshotAgreesWithACopyTakenWhenItWasShared) {
  BlockTable table;
  churn_against_copies(table);
}

// Versions run out after a few snapshots here (after 2^32 - 1 in use): the table renumbers them
// again and again, with few and with many snapshots held, and every snapshot still sees what it
// saw when it was shared.
TEST(BlockTable, RenumberedVersionsKeepWhatEverySnapshotSees) {
  for (const std::uint32_t last_version : {2u, 5u, 40u}) {
    SCOPED_TRACE(last_version);
    BlockTable table(last_version);
    churn_against_copies(table);
  }
}

}  // namespace
