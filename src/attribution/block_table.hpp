// The live blocks of one device as a versioned hash table keyed by address.
//
// Live blocks sit in an open-addressing table (linear probing, backward-shift deletion, no
// tombstones). A slot is 32 bytes: the address, the size with the kind in its top byte, the
// time, the stack id and the 32-bit version it was born in. A snapshot is a version: taking one
// marks it held and copies nothing; later changes carry later versions. A block erased or
// replaced while a held snapshot can see it (born at or before that version) moves to a list of
// retired blocks with the version it died in, and leaves that list once no held snapshot sees
// it. So an event costs one hash probe sequence whatever the number of live blocks or snapshots
// (O(1) expected; retiring adds O(log h) for h held snapshots), the memory is one slot per live
// block (the table halves when it is under 3/16 full, down to 16 slots) plus the blocks a held
// snapshot still needs, and reading a snapshot walks the table.
//
// Versions are 32 bits: when they run out (after 2^32 - 1 snapshots) the table renumbers them
// in one walk, each version a block was born or died in becoming the rank of the first held
// version at or after it, which keeps every answer a held snapshot gives. A snapshot's handle
// is not its version, so the handles the caller keeps stay valid.
//
// Not thread-safe: the recorder serializes every call on one device's table (its mutex),
// reading snapshots included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpumem::attribution {

struct BlockInfo {
  std::uint64_t bytes = 0;   // kept below 2^56 (64 PiB)
  std::int64_t time_ns = 0;  // when it was allocated (steady clock)
  std::uint32_t stack = 0;   // interned stack id, 0 for none
  std::uint8_t kind = 0;     // gpumem::BlockKind
};

// A held snapshot of one table: its handle, or kNoSnapshot.
using Snapshot = std::uint64_t;
inline constexpr Snapshot kNoSnapshot = 0;

class BlockTable {
 public:
  BlockTable() = default;
  // Versions are renumbered once `last_version` is reached (the default: when 32 bits run out).
  explicit BlockTable(std::uint32_t last_version) : last_version_(last_version) {}
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  // Inserts or replaces. Throws std::bad_alloc (the table is unchanged then).
  void insert(std::uint64_t key, const BlockInfo& info);
  // Inserts only when the key is absent.
  void insert_if_absent(std::uint64_t key, const BlockInfo& info);
  // Throws std::bad_alloc when a held snapshot still sees the block and there is no room to keep
  // it (the table is unchanged then).
  bool erase(std::uint64_t key);
  std::optional<BlockInfo> find(std::uint64_t key) const noexcept;
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
    std::uint64_t key = 0;         // 0: empty (no block lives at address 0, no tag is 0)
    std::uint64_t bytes_kind = 0;  // the size, the kind in the top byte
    std::int64_t time_ns = 0;
    std::uint32_t stack = 0;
    std::uint32_t born = 0;  // the version it was inserted in
  };
  static_assert(sizeof(Slot) == 32);
  struct Retired {
    Slot block;
    std::uint32_t died = 0;  // the version it was erased in
  };
  struct Held {
    Snapshot handle = kNoSnapshot;
    std::uint32_t version = 0;
    std::uint32_t holds = 0;
  };

  static Slot pack(std::uint64_t key, const BlockInfo& info, std::uint32_t born) noexcept;
  static BlockInfo unpack(const Slot& slot) noexcept;
  std::size_t home(std::uint64_t key) const noexcept;
  std::size_t position(std::uint64_t key) const noexcept;  // of the key, or the table's size
  void remove_at(std::size_t hole) noexcept;
  void resize(std::size_t slots);
  bool seen(std::uint32_t born, std::uint32_t died) const noexcept;  // by a held snapshot
  std::size_t held(Snapshot snapshot) const noexcept;  // its index in held_, or held_'s size
  void retire(const Slot& slot);
  void prune() noexcept;
  void renumber() noexcept;

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::uint64_t bytes_ = 0;
  int shift_ = 63;
  std::uint32_t version_ = 1;  // of the next change; every held version is below it
  std::uint32_t last_version_ = UINT32_MAX;
  Snapshot next_handle_ = 1;
  std::vector<Held> held_;  // ascending versions (and handles)
  std::vector<Retired> retired_;
  std::size_t prune_at_ = 64;  // retired blocks that trigger the next prune
};

}  // namespace gpumem::attribution
