// The live blocks of one device as a versioned hash table keyed by address.
//
// Live blocks sit in an open-addressing table (linear probing, backward-shift deletion, no
// tombstones), each slot a block's address, size, kind, time, stack and the version it was born
// in. A snapshot is a version: taking one marks it held and copies nothing; later changes carry
// later versions. A block erased or replaced while a held snapshot can see it (born at or before
// that version) moves to a list of retired blocks with the version it died in, and leaves that
// list once no held snapshot sees it. So an event costs one hash probe sequence whatever the
// number of live blocks or snapshots (O(1) expected; retiring adds O(log h) for h held
// snapshots), the memory is one slot per live block (the table halves when it is under 3/16
// full, down to 16 slots) plus the blocks a held snapshot still needs, and reading a snapshot
// walks the table.
//
// Not thread-safe: the recorder serializes every call on one device's table (its mutex),
// reading snapshots included.
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

// A held snapshot of one table: its version, or kNoSnapshot.
using Snapshot = std::uint64_t;
inline constexpr Snapshot kNoSnapshot = 0;

class BlockTable {
 public:
  BlockTable() = default;
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  // Inserts or replaces. Throws std::bad_alloc (the table is unchanged then).
  void insert(std::uint64_t key, const BlockInfo& info);
  // Inserts only when the key is absent.
  void insert_if_absent(std::uint64_t key, const BlockInfo& info);
  // Throws std::bad_alloc when a held snapshot still sees the block and there is no room to keep
  // it (the table is unchanged then).
  bool erase(std::uint64_t key);
  const BlockInfo* find(std::uint64_t key) const noexcept;  // valid until the next change
  // Every block gone, from the table and (when there is no room to keep them) from snapshots.
  void clear() noexcept;
  std::size_t size() const noexcept { return size_; }
  std::uint64_t bytes() const noexcept { return bytes_; }

  // The current set, held until release(); kNoSnapshot when there is no memory to note it.
  Snapshot share() noexcept;
  void release(Snapshot snapshot) noexcept;  // kNoSnapshot: nothing
  // Another hold on a held snapshot (kNoSnapshot: nothing, returned as is).
  Snapshot retain(Snapshot snapshot) noexcept;

  struct Entry {
    std::uint64_t key;
    BlockInfo info;
  };
  // Appends the blocks of a held snapshot (none for kNoSnapshot).
  void collect(Snapshot snapshot, std::vector<Entry>& out) const;
  std::size_t count(Snapshot snapshot) const noexcept;
  // Appends the blocks live now.
  void collect_live(std::vector<Entry>& out) const;

  // The bytes this table holds now: its slots, the retired blocks and the held versions.
  std::size_t memory_bytes() const noexcept;
  std::size_t retired() const noexcept { return retired_.size(); }

 private:
  struct Slot {
    std::uint64_t key = 0;  // 0: empty (no block lives at address 0, no tag is 0)
    BlockInfo info;
    std::uint64_t born = 0;  // the version it was inserted in
  };
  struct Retired {
    Slot block;
    std::uint64_t died = 0;  // the version it was erased in
  };
  struct Held {
    std::uint64_t version = 0;
    std::uint32_t holds = 0;
  };

  std::size_t home(std::uint64_t key) const noexcept;
  std::size_t position(std::uint64_t key) const noexcept;  // of the key, or the table's size
  void remove_at(std::size_t hole) noexcept;
  void resize(std::size_t slots);
  bool seen(std::uint64_t born, std::uint64_t died) const noexcept;  // by a held snapshot
  void retire(const Slot& slot);
  void prune() noexcept;

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::uint64_t bytes_ = 0;
  int shift_ = 63;
  std::uint64_t version_ = 1;  // of the next change; every held version is below it
  std::vector<Held> held_;     // ascending versions
  std::vector<Retired> retired_;
  std::size_t prune_at_ = 64;  // retired blocks that trigger the next prune
};

}  // namespace gpumem::attribution
