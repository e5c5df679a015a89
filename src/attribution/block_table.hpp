// The live blocks of one device as a versioned hash table keyed by address.
//
// Live blocks sit in an open-addressing table (linear probing, backward-shift deletion, no
// tombstones) of any size, grown past 13/16 full and shrunk under 7/16, each time to 5/8. A slot is
// 24 bytes: the key packed into 56 bits with the kind in the top byte, the size in 32 bits, the
// stack id, and the time, which is also the stamp the block was inserted at. A block that does
// not fit one (a key that does not pack, a size of 4 GiB or more, a time that cannot be its stamp)
// is kept whole in a map beside the table, so every field round-trips whatever its value.
//
// A snapshot is a stamp: taking one marks the latest stamp held and copies nothing; every later
// change is stamped after it (a block's own time where that is after the last snapshot, else
// just after that snapshot, the block then kept beside the table). A block erased or replaced
// while a held snapshot can see it (inserted at or before that stamp) moves to a list of retired
// blocks with the stamp it died at, and leaves that list once no held snapshot sees it. So an
// event costs one hash probe sequence whatever the number of live blocks or snapshots (O(1)
// expected; retiring adds O(log h) for h held snapshots), the memory is one slot per live block
// at 7/16 to 13/16 full (the table shrinks down to 16 slots) plus the blocks a held snapshot still
// needs, and reading a snapshot walks the table.
//
// Keys: the top 4 bits are a tag (gpumem's keys for blocks without an address of their own), an
// untagged key is a device address. A device address packs when it is a multiple of 256, which
// NVIDIA documents for every address the driver and runtime allocate ("always aligned to at least
// 256 bytes", CUDA C++ Programming Guide, Device Memory Accesses); a tagged key when the rest is
// below 2^52.
//
// Not thread-safe: the recorder serializes every call on one device's table (its mutex),
// reading snapshots included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gpumem::attribution {

struct BlockInfo {
  std::uint64_t bytes = 0;
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

  // A held snapshot's blocks read in steps, the table free to change between them (each step
  // and every change still made under the caller's one lock), so that no step is longer than
  // `slots` slots or retired blocks: begin_walk (false: kNoSnapshot, nothing to read), walk_step
  // until it returns true, then end_walk, always (one walk at a time). While a walk is on, the
  // table does not shrink, nor prune its retired list, and a block it sees that an erase shifts
  // from a slot not yet read to one already read is kept for the next step; a growth hands every
  // block not yet read to the next step at once. The blocks come out in no order, and a block
  // freed during the walk may come out twice (from its slot, then from the retired list): at one
  // snapshot a key is one block, so sorting by key and keeping one of each gives the snapshot
  // (walk_doubled() after the last step: whether a block may have come out twice).
  // After the last step, walk_lost() says that there was no memory to keep a shifted block: the
  // caller then reads the snapshot whole (collect) before end_walk.
  bool begin_walk(Snapshot snapshot);
  bool walk_step(std::vector<Entry>& out, std::size_t slots);
  bool walk_lost() const noexcept { return walk_.lost; }
  bool walk_doubled() const noexcept { return walk_.doubled; }
  Snapshot walked() const noexcept { return walk_.snapshot; }
  void end_walk() noexcept;

  // The bytes this table holds now: its slots, the blocks beside it (a map node each, with two
  // words for the allocator, and its buckets), the retired blocks and the held snapshots.
  std::size_t memory_bytes() const noexcept;
  std::size_t retired() const noexcept { return retired_.size(); }
  // Live blocks kept beside the table rather than in a slot.
  std::size_t beside() const noexcept { return beside_.size(); }

 private:
  struct Slot {
    std::uint64_t key = 0;  // the packed key, the kind in the top byte; 0: empty
    std::uint32_t bytes = 0;
    std::uint32_t stack = 0;
    std::int64_t time_ns = 0;  // and the stamp it was inserted at
  };
  static_assert(sizeof(Slot) == 24);
  struct Wide {  // a live block kept beside the table
    BlockInfo info;
    std::int64_t born = 0;
  };
  struct Retired {
    std::uint64_t key = 0;
    BlockInfo info;
    std::int64_t born = 0;
    std::int64_t died = 0;
  };
  struct Held {
    Snapshot handle = kNoSnapshot;
    std::int64_t stamp = 0;
    std::uint32_t holds = 0;
  };
  struct Found {        // where a key's block lives
    std::size_t slot;   // or slots_.size()
    std::size_t empty;  // when not in a slot: the empty slot its probe ended on (or slots_.size())
    std::unordered_map<std::uint64_t, Wide>::iterator wide;  // or beside_.end()
  };

  static BlockInfo unpack(const Slot& slot) noexcept;
  std::size_t home(std::uint64_t packed) const noexcept;
  // The slot of `packed`, or the table's size (then `*empty`: the empty slot the probe ended on).
  std::size_t position(std::uint64_t packed, std::size_t* empty = nullptr) const noexcept;
  Found locate(std::uint64_t key);
  std::int64_t stamp_for(std::int64_t time_ns) const noexcept;
  void place(const Slot& slot) noexcept;  // into a table with room
  void drop_wide(std::unordered_map<std::uint64_t, Wide>::iterator wide) noexcept;
  void remove_at(std::size_t hole) noexcept;
  void resize(std::size_t slots);
  bool seen(std::int64_t born, std::int64_t died) const noexcept;  // by a held snapshot
  std::size_t held(Snapshot snapshot) const noexcept;  // its index in held_, or held_'s size
  void make_room_to_retire();
  void retire(std::uint64_t key, const BlockInfo& info, std::int64_t born) noexcept;
  void prune() noexcept;

  enum class Phase { none, slots, retired };
  struct Walk {
    Phase phase = Phase::none;
    Snapshot snapshot = kNoSnapshot;  // held by the walk
    std::int64_t stamp = 0;
    std::size_t cursor = 0;    // the slots (then retired blocks) below it are read
    std::vector<Entry> moved;  // blocks it sees, shifted into slots already read
    bool lost = false;
    bool doubled = false;
  };
  void keep_for_walk(const Slot& slot) noexcept;

  std::vector<Slot> slots_;
  Walk walk_;
  std::size_t size_ = 0;  // live blocks, in slots and beside
  std::size_t in_slots_ = 0;
  std::uint64_t bytes_ = 0;
  std::unordered_map<std::uint64_t, Wide> beside_;
  // Stamps: every change so far is stamped at or before stamp_; every later one at or after
  // next_ (one past the latest held snapshot's stamp).
  std::int64_t stamp_ = INT64_MIN;
  std::int64_t next_ = INT64_MIN;
  Snapshot next_handle_ = 1;
  std::vector<Held> held_;  // ascending stamps (and handles)
  std::vector<Retired> retired_;
  std::size_t prune_at_ = 64;  // retired blocks that trigger the next prune
};

}  // namespace gpumem::attribution
