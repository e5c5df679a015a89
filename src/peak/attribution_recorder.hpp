// Attribution mode of the exact source: while any attributing counter is alive, every exact
// level change of a device is made under that device's recorder mutex, together with the change
// to its live-block table (attribution/block_table.hpp), so that the table and the level move as
// one. The recorder keeps epochs as the channel does: a snapshot of the table at the running
// epoch's peak, folded at each attributing counter's start or reset into every attributing
// counter whose peak it raises. A snapshot is a held version; nothing is copied per peak.
//
// A counter's peak snapshot is read in steps (peak_of), the mutex let go between them, so that a
// read holds it for one step, not for the whole table.
//
// Lock order: a recorder's reader mutex (peak_of), then footprint / VMM mutexes, then a
// recorder's mutex, then the channel's control mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "attribution/block_table.hpp"
#include "peak/channel.hpp"

namespace gpumem::peak::attribution {

using gpumem::attribution::BlockTable;
using gpumem::attribution::kNoSnapshot;
using gpumem::attribution::Snapshot;

inline std::atomic<int> g_attributing{0};  // attributing counters alive

// The one check on the event path when attribution is off: one relaxed load.
[[gnu::always_inline]] inline bool active() noexcept {
  return g_attributing.load(std::memory_order_relaxed) > 0;
}

// Blocks that are not at a device address of their own (VMM physical memory) are keyed with a
// tag above any device address; the document writes their key without it.
inline constexpr std::uint64_t kVmmKeyTag = std::uint64_t{1} << 60;
inline constexpr std::uint64_t kPoolKeyTag = std::uint64_t{2} << 60;   // | the pool handle
inline constexpr std::uint64_t kGraphKeyTag = std::uint64_t{3} << 60;  // | the device
inline constexpr std::uint64_t kKeyTagMask = std::uint64_t{0xf} << 60;

struct BlockEvent {
  std::uint64_t key = 0;    // device address, or a tagged key
  std::uint64_t bytes = 0;  // allocations
  std::uint32_t stack = 0;  // allocations: interned stack id
  std::uint8_t kind = 0;    // gpumem::BlockKind
  bool allocation = false;  // false: a free of `key`
  // A reservation (a pool's, the graph memory's) now `bytes` large (0: gone); its stack and time
  // are kept from when it was first seen, the stack taken from `stack` if it had none.
  bool resize = false;
};

// An attributing counter's peak.
struct Slot {
  int device = 0;
  std::int64_t peak_level = 0;
  std::int64_t peak_time_ns = 0;
  Snapshot peak_root = kNoSnapshot;  // of its device's table
};

// Slots (or retired blocks) a peak snapshot's walk reads per hold of the device's mutex.
inline constexpr std::size_t kWalkStep = 4096;

struct RawSnapshot {
  std::int64_t level = 0;
  std::int64_t time_ns = 0;
  std::vector<BlockTable::Entry> blocks;
};

// Control: each replaces the channel's own operation for an attributing counter. attach
// returns true for the first attributing counter of the process (the caller then seeds the
// tables with the blocks already live).
bool attach(Channel& channel, CounterSlot& counter, Slot& slot);
void restart(Channel& channel, CounterSlot& counter, Slot& slot);
void detach(Channel& channel, CounterSlot& counter, Slot& slot);
RawSnapshot peak_of(Slot& slot);

// A block live before attribution began: no stack, aged from now.
void seed(int device, std::uint64_t key, std::uint64_t bytes);

// The event path in attribution mode: moves the channel by delta (as Channel::add) and the table
// by `event` (nullptr: a change with no block, as a pool's reservation or the context).
void record(Channel& channel, int device, std::int64_t delta, const BlockEvent* event) noexcept;
// The same, with a placed level's bracketed twin moved as `bracket` says (Channel::add).
void record(Channel& channel, int device, std::int64_t delta, const BlockEvent* event,
            Channel::Bracket bracket) noexcept;
// A context's blocks die with it.
void forget_kind(int device, std::uint8_t kind) noexcept;
// The blocks live now and the level (an allocation failed).
RawSnapshot live(Channel& channel, int device);

std::int64_t now_ns() noexcept;

}  // namespace gpumem::peak::attribution
