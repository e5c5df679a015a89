// The persistent block tree: a shared root never changes, and a change copies only a path.
#include "attribution/block_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using gpumem::attribution::BlockInfo;
using gpumem::attribution::BlockTree;
using gpumem::attribution::Root;

std::vector<std::uint64_t> keys(Root root) {
  std::vector<BlockTree::Entry> entries;
  BlockTree::collect(root, entries);
  std::vector<std::uint64_t> out;
  for (const auto& entry : entries) out.push_back(entry.key);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(BlockTree, ASharedRootKeepsItsBlocksWhileTheTreeChanges) {
  BlockTree tree;
  for (std::uint64_t key = 1; key <= 100; ++key) tree.insert(key * 4096, {key, 0, 1, 0});
  const Root before = tree.share();
  tree.erase(50 * 4096);
  tree.insert(1000 * 4096, {7, 0, 2, 0});
  tree.insert(10 * 4096, {99, 0, 3, 0});  // replaced
  std::vector<std::uint64_t> expected;
  for (std::uint64_t key = 1; key <= 100; ++key) expected.push_back(key * 4096);
  EXPECT_EQ(keys(before), expected);
  std::vector<BlockTree::Entry> entries;
  BlockTree::collect(before, entries);
  for (const auto& entry : entries) EXPECT_EQ(entry.info.bytes, entry.key / 4096);
  EXPECT_EQ(tree.size(), 100u);
  EXPECT_EQ(tree.bytes(), 5050u - 50 - 10 + 7 + 99);
  const Root after = tree.share();
  EXPECT_EQ(BlockTree::count(after), 100u);
  EXPECT_EQ(keys(after).back(), 1000u * 4096);
  BlockTree::release(before);
  BlockTree::release(after);
}

TEST(BlockTree, ASnapshotCostsAPathNotACopy) {
  const std::size_t base = BlockTree::nodes_alive();
  BlockTree tree;
  constexpr std::uint64_t kBlocks = 100000;
  for (std::uint64_t key = 1; key <= kBlocks; ++key) tree.insert(key << 21, {1, 0, 0, 0});
  EXPECT_EQ(BlockTree::nodes_alive() - base, kBlocks);
  std::vector<Root> snapshots;
  for (std::uint64_t i = 0; i < 100; ++i) {
    snapshots.push_back(tree.share());
    tree.insert((kBlocks + 1 + i) << 21, {1, 0, 0, 0});
  }
  // 100 snapshots of ~100,000 blocks: each new one costs the inserted path (expected depth of a
  // treap of n keys is about 2 ln n, 23 here), not 100,000 nodes.
  const std::size_t extra = BlockTree::nodes_alive() - base - kBlocks - 100;
  EXPECT_LT(extra, 100u * 80);
  for (Root root : snapshots) BlockTree::release(root);
  EXPECT_EQ(BlockTree::nodes_alive() - base, kBlocks + 100);
  tree.clear();
  EXPECT_EQ(BlockTree::nodes_alive(), base);
}

TEST(BlockTree, EraseOfAnAbsentKeyChangesNothing) {
  BlockTree tree;
  tree.insert(4096, {10, 0, 0, 0});
  const std::size_t nodes = BlockTree::nodes_alive();
  const Root shared = tree.share();
  EXPECT_FALSE(tree.erase(8192));
  EXPECT_EQ(BlockTree::nodes_alive(), nodes);
  EXPECT_TRUE(tree.erase(4096));
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(BlockTree::count(shared), 1u);
  BlockTree::release(shared);
}

}  // namespace
