// The versioned block table: a held snapshot never changes, taking one copies nothing, and the
// memory follows the live blocks and the snapshots still held.
#include "attribution/block_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <utility>
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
  std::int64_t clock = 0;  // each block allocated after the last
  for (std::uint64_t key = 1; key <= kBlocks; ++key) table.insert(key << 21, {1, ++clock, 0, 0});
  const std::size_t live = table.memory_bytes();
  std::vector<Snapshot> snapshots;
  for (std::uint64_t i = 0; i < 100; ++i) {
    snapshots.push_back(table.share());
    table.insert((kBlocks + 1 + i) << 21, {1, ++clock, 0, 0});
  }
  EXPECT_EQ(table.retired(), 0u);
  EXPECT_EQ(table.beside(), 0u);
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
  // 24-byte slots, at least 5/8 full after growing: within 2x the 20 bytes a block must keep.
  EXPECT_LE(full, kBlocks * 24 * 8 / 5 + 24);
  EXPECT_LE(full, kBlocks * 40);
  EXPECT_EQ(table.beside(), 0u);
  for (std::uint64_t key = 1; key <= kBlocks - 100; ++key) ASSERT_TRUE(table.erase(key << 12));
  EXPECT_LT(table.memory_bytes(), full / 100);
  const Snapshot held = table.share();
  for (std::uint64_t key = kBlocks - 99; key <= kBlocks; ++key) table.erase(key << 12);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.count(held), 100u);  // the snapshot still sees them
  table.release(held);
  EXPECT_LE(table.memory_bytes(), 16u * 24);  // 16 slots, kept for the next block
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

BlockTable::Entry entry_of(const BlockTable& table, std::uint64_t key) {
  std::vector<BlockTable::Entry> entries;
  table.collect_live(entries);
  for (const auto& entry : entries) {
    if (entry.key == key) return entry;
  }
  ADD_FAILURE() << "no block at " << key;
  return {};
}

void expect_kept(const BlockTable& table, std::uint64_t key, const BlockInfo& info) {
  SCOPED_TRACE(key);
  const auto found = table.find(key);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->bytes, info.bytes);
  EXPECT_EQ(found->time_ns, info.time_ns);
  EXPECT_EQ(found->stack, info.stack);
  EXPECT_EQ(found->kind, info.kind);
  const BlockTable::Entry walked = entry_of(table, key);  // the key as a walk unpacks it
  EXPECT_EQ(walked.key, key);
  EXPECT_EQ(walked.info.bytes, info.bytes);
  EXPECT_EQ(walked.info.time_ns, info.time_ns);
}

// Each field at the edges of what a slot holds, and just past them (kept beside the table).
TEST(BlockTable, KeepsEveryFieldOfABlockAtItsLimits) {
  BlockTable table;
  const std::uint64_t tagged_rest = (std::uint64_t{1} << 52) - 1;
  const std::vector<std::pair<std::uint64_t, BlockInfo>> in_slots = {
      {256, {1, INT64_MIN, 1, 0}},                                            // the lowest address
      {(std::uint64_t{1} << 60) - 256, {0xffffffffu, -5, 0xffffffffu, 255}},  // the highest
      {std::uint64_t{3} << 60 | tagged_rest, {4096, 7, 0, 4}},  // a tagged key's limit
      {std::uint64_t{15} << 60 | 1, {1, 8, 2, 1}},              // the highest tag
  };
  for (const auto& [key, info] : in_slots) table.insert(key, info);
  EXPECT_EQ(table.beside(), 0u);  // all of them in slots
  const std::vector<std::pair<std::uint64_t, BlockInfo>> beside = {
      {std::uint64_t{1} << 32 | 512, {std::uint64_t{1} << 32, 9, 3, 0}},  // 4 GiB: past 32 bits
      {1024, {UINT64_MAX, 10, 4, 0}},                                     // the largest size
      {768 + 7, {100, 11, 5, 0}},  // an address not a multiple of 256
      {std::uint64_t{2} << 60 | (tagged_rest + 1), {200, 12, 6, 2}},  // a tagged key too long
      {UINT64_MAX, {300, 13, 7, 3}},                                  // every bit
      {2048, {400, INT64_MAX, 8, 0}},                                 // a time past what stamps use
  };
  for (const auto& [key, info] : beside) table.insert(key, info);
  EXPECT_EQ(table.beside(), beside.size());
  EXPECT_EQ(table.size(), in_slots.size() + beside.size());
  for (const auto& [key, info] : in_slots) expect_kept(table, key, info);
  for (const auto& [key, info] : beside) expect_kept(table, key, info);
  // A block that fits again moves back into a slot; one that no longer fits moves out.
  table.insert(1024, {5, 20, 4, 0});
  table.insert(256, {std::uint64_t{5} << 32, 21, 1, 0});
  expect_kept(table, 1024, {5, 20, 4, 0});
  expect_kept(table, 256, {std::uint64_t{5} << 32, 21, 1, 0});
  EXPECT_EQ(table.beside(), beside.size());
  for (const auto& [key, info] : beside) EXPECT_TRUE(table.erase(key));
  EXPECT_EQ(table.beside(), 1u);  // 256's 20 GiB
  EXPECT_TRUE(table.erase(256));
  EXPECT_EQ(table.beside(), 0u);
  EXPECT_EQ(table.size(), in_slots.size() - 1);
}

// A snapshot is the latest stamp: a block allocated after it at the same time, or at an earlier
// one, is kept beside the table (exact), and no snapshot sees a block from after it.
TEST(BlockTable, ABlockTimedAtOrBeforeTheLastSnapshotIsNotSeenByIt) {
  BlockTable table;
  table.insert(1 << 12, {1, 100, 1, 0});
  const Snapshot first = table.share();
  table.insert(2 << 12, {2, 100, 1, 0});  // the snapshot's own time
  table.insert(3 << 12, {3, 50, 1, 0});   // earlier
  table.insert(4 << 12, {4, 101, 1, 0});  // after: a slot
  EXPECT_EQ(table.beside(), 2u);
  EXPECT_EQ(contents(table, first), (Contents{{1 << 12, 1}}));
  const Snapshot second = table.share();
  table.erase(1 << 12);
  table.erase(2 << 12);
  table.insert(3 << 12, {30, 101, 1, 0});  // replaced at a time before the second snapshot
  const Snapshot third = table.share();
  EXPECT_EQ(contents(table, first), (Contents{{1 << 12, 1}}));
  EXPECT_EQ(contents(table, second),
            (Contents{{1 << 12, 1}, {2 << 12, 2}, {3 << 12, 3}, {4 << 12, 4}}));
  EXPECT_EQ(contents(table, third), (Contents{{3 << 12, 30}, {4 << 12, 4}}));
  for (const Snapshot each : {first, second, third}) table.release(each);
  EXPECT_EQ(table.retired(), 0u);
}

// Random churn against reference copies: blocks come, go and are replaced while snapshots are
// taken and released in any order, and the population swings between a handful and thousands,
// so the table grows and shrinks under held snapshots and the retired list is pruned many times.
// `block` gives each new block's fields (the step's number, the random source).
using Fields = std::tuple<std::uint64_t, std::int64_t, std::uint32_t, std::uint8_t>;
using FullContents = std::map<std::uint64_t, Fields>;

FullContents full_contents(const BlockTable& table, Snapshot snapshot) {
  std::vector<BlockTable::Entry> entries;
  table.collect(snapshot, entries);
  FullContents out;
  for (const auto& entry : entries) {
    const Fields fields{entry.info.bytes, entry.info.time_ns, entry.info.stack, entry.info.kind};
    EXPECT_TRUE(out.emplace(entry.key, fields).second) << "twice: " << entry.key;
  }
  return out;
}

template <class Block>
void churn_against_copies(BlockTable& table, const Block& block) {
  FullContents now;
  std::vector<std::pair<Snapshot, FullContents>> held;
  std::mt19937_64 random(11);
  std::int64_t step_number = 0;
  for (int phase = 0; phase < 6; ++phase) {
    const bool growing = phase % 2 == 0;
    for (int step = 0; step < 6000; ++step, ++step_number) {
      const unsigned what = random() % 100;
      if (what < 2) {
        held.emplace_back(table.share(), now);
      } else if (what < 4 && !held.empty()) {
        const std::size_t pick = random() % held.size();
        ASSERT_EQ(full_contents(table, held[pick].first), held[pick].second)
            << phase << " " << step;
        table.release(held[pick].first);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick));
      } else if (what == 4) {
        table.clear();
        now.clear();
      } else if (growing == (what % 4 != 0)) {
        const auto [key, info] = block(step_number, random);
        table.insert(key, info);
        now[key] = Fields{info.bytes, info.time_ns, info.stack, info.kind};
      } else {
        const std::uint64_t key = block(step_number, random).first;
        ASSERT_EQ(table.erase(key), now.erase(key) == 1);
      }
    }
    ASSERT_EQ(table.size(), now.size());
    for (const auto& [snapshot, copy] : held) ASSERT_EQ(full_contents(table, snapshot), copy);
    const Snapshot current = table.share();
    EXPECT_EQ(full_contents(table, current), now);
    table.release(current);
  }
  for (const auto& [snapshot, copy] : held) table.release(snapshot);
  EXPECT_EQ(table.retired(), 0u);
}

std::uint64_t some_address(std::mt19937_64& random) {
  return ((random() % 2000) + 1) << 9;
}

// Each block timed after every snapshot before it (a clock that moves): all in slots.
TEST(BlockTable, EverySnapshotAgreesWithACopyTakenWhenItWasShared) {
  BlockTable table;
  churn_against_copies(table, [](std::int64_t step, std::mt19937_64& random) {
    return std::pair{some_address(random), BlockInfo{random() % 1000 + 1, step, 1, 0}};
  });
  EXPECT_EQ(table.beside(), 0u);
}

// Times that repeat and go back (a clock that has not moved, a reservation that keeps its
// first time), sizes past 32 bits and keys that do not pack: many blocks beside the table, and
// blocks moving between it and its slots as they are replaced.
TEST(BlockTable, EverySnapshotAgreesWithACopyWhateverTheBlocksFields) {
  BlockTable table;
  churn_against_copies(table, [](std::int64_t step, std::mt19937_64& random) {
    std::uint64_t key = some_address(random);
    if (key % 7 == 0) key |= 3;  // not a multiple of 256
    if (key % 11 == 0) key |= std::uint64_t{2} << 60;
    const std::uint64_t bytes =
        random() % 8 == 0 ? (std::uint64_t{1} << 32) + random() % 1000 : random() % 1000 + 1;
    const std::int64_t time = step / 8 - static_cast<std::int64_t>(random() % 3);
    return std::pair{key, BlockInfo{bytes, time, static_cast<std::uint32_t>(random()),
                                    static_cast<std::uint8_t>(random() % 5)}};
  });
}

// The blocks of a walk in steps, one of each key (what the recorder's peak_of keeps).
FullContents walked(std::vector<BlockTable::Entry> entries) {
  FullContents out;
  for (const auto& entry : entries) {
    const Fields fields{entry.info.bytes, entry.info.time_ns, entry.info.stack, entry.info.kind};
    const auto [at, added] = out.emplace(entry.key, fields);
    EXPECT_TRUE(added || at->second == fields) << "two blocks at " << entry.key;
  }
  return out;
}

// A snapshot read in steps of a few slots while the table changes between every two steps:
// blocks freed (shifting others back across the slot the walk has reached), replaced, moved
// beside the table and back, new blocks enough to grow it, other snapshots taken and released,
// and now and then everything cleared. The walk gives what a copy taken at the snapshot holds.
TEST(BlockTable, ASnapshotReadInStepsWhileTheTableChangesIsTheSnapshot) {
  std::mt19937_64 random(5);
  std::int64_t clock = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    BlockTable table;
    FullContents now;
    const std::uint64_t keys = 64 + random() % 4000;
    const auto change = [&] {
      const std::uint64_t key = ((random() % keys) + 1) << 9;
      const unsigned what = random() % 100;
      if (what < 45) {
        table.erase(key);
        now.erase(key);
      } else if (what < 95) {
        const std::uint64_t bytes =
            random() % 16 == 0 ? std::uint64_t{1} << 33 : random() % 900 + 1;
        const std::int64_t time = random() % 8 == 0 ? clock : ++clock;  // sometimes beside
        table.insert(key, {bytes, time, static_cast<std::uint32_t>(round), 0});
        now[key] = Fields{bytes, time, static_cast<std::uint32_t>(round), 0};
      } else if (what < 99) {
        table.release(table.share());
      } else if (random() % 4 == 0) {
        table.clear();
        now.clear();
      }
    };
    for (std::uint64_t i = 0; i < keys / 2; ++i) change();
    const Snapshot snapshot = table.share();
    const FullContents copy = now;
    ASSERT_TRUE(table.begin_walk(snapshot));
    table.release(snapshot);  // the walk holds it
    const std::size_t step = 1 + random() % 64;
    const int changes = static_cast<int>(random() % 40);
    std::vector<BlockTable::Entry> entries;
    while (!table.walk_step(entries, step)) {
      for (int i = 0; i < changes; ++i) change();
    }
    EXPECT_FALSE(table.walk_lost());
    EXPECT_EQ(walked(entries), copy);
    if (!table.walk_doubled()) {
      EXPECT_EQ(entries.size(), copy.size());  // none read twice
    }
    table.end_walk();
    EXPECT_EQ(table.retired(), 0u);  // nothing held any more
    EXPECT_EQ(table.size(), now.size());
  }
}

// Blocks read in their slots, then cleared while the walk reads the retired list: read twice, and
// the walk says so (the recorder then keeps one of each).
TEST(BlockTable, AWalkThatMayReadABlockTwiceSaysSo) {
  BlockTable table;
  for (std::uint64_t key = 1; key <= 8; ++key) table.insert(key << 9, {key, 1, 0, 0});
  const Snapshot snapshot = table.share();
  ASSERT_TRUE(table.begin_walk(snapshot));
  std::vector<BlockTable::Entry> entries;
  EXPECT_FALSE(table.walk_step(entries, 16));  // every slot (16 of them): the retired list next
  EXPECT_EQ(entries.size(), 8u);
  EXPECT_FALSE(table.walk_doubled());
  table.clear();
  while (!table.walk_step(entries, 16)) {
  }
  EXPECT_TRUE(table.walk_doubled());
  EXPECT_EQ(entries.size(), 16u);
  EXPECT_EQ(walked(entries).size(), 8u);
  table.end_walk();
  table.release(snapshot);
  EXPECT_EQ(table.retired(), 0u);
}

}  // namespace
