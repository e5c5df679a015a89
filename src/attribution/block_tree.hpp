// The live blocks of one device as a persistent (structurally shared) treap keyed by address.
//
// A snapshot is a root pointer: taking one adds a reference to the root and copies nothing. An
// insert or erase copies only the nodes on its path that a snapshot still shares (O(log n) new
// nodes), and changes the others in place, so a rising level that makes a new peak at each event
// costs a path per event, and events with no snapshot to keep cost no copy at all.
//
// Not thread-safe: the recorder serializes every call on one device's tree (its mutex), and
// references are plain integers changed only there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpumem::attribution {

struct BlockInfo {
  std::uint64_t bytes = 0;
  std::int64_t time_ns = 0;  // when it was allocated (steady clock)
  std::uint32_t stack = 0;   // interned stack id, 0 for none
  std::uint8_t kind = 0;     // gpumem::BlockKind
};

struct Node;

// A shared root: what a snapshot holds. Release it with release() under the same serialization.
using Root = const Node*;

class BlockTree {
 public:
  BlockTree() = default;
  ~BlockTree();
  BlockTree(const BlockTree&) = delete;
  BlockTree& operator=(const BlockTree&) = delete;

  // Inserts or replaces. Throws std::bad_alloc (the tree is unchanged then).
  void insert(std::uint64_t key, const BlockInfo& info);
  // Inserts only when the key is absent.
  void insert_if_absent(std::uint64_t key, const BlockInfo& info);
  bool erase(std::uint64_t key);
  const BlockInfo* find(std::uint64_t key) const noexcept;  // valid until the next change
  void clear() noexcept;
  std::size_t size() const noexcept { return size_; }
  std::uint64_t bytes() const noexcept { return bytes_; }

  // The current set, shared: a new reference to the root.
  Root share() const noexcept;
  static void release(Root root) noexcept;
  static Root retain(Root root) noexcept;  // another reference to a shared root

  struct Entry {
    std::uint64_t key;
    BlockInfo info;
  };
  static void collect(Root root, std::vector<Entry>& out);
  static std::size_t count(Root root) noexcept;

  // Nodes allocated by every tree of the process now, and their size (for memory figures).
  static std::size_t nodes_alive() noexcept;
  static std::size_t node_bytes() noexcept;

 private:
  Node* root_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace gpumem::attribution
