// Where the exact source keeps each CUDA ordinal's level: the part of the process footprint that
// its events, pools and graphs account for. By default in the process; `gpumem run` places every
// ordinal's level word in the process's slot of the run's counters file, so that the monitor
// reads the very words this process's own counters read, and each event moves its level once.
#pragma once

#include <atomic>
#include <cstdint>

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::detail {

// The ordinals a ledger has words for: 0 to kLedgerOrdinals - 1, those the exact source counts.
inline constexpr int kLedgerOrdinals = 64;

// Called on the event's thread with each delta of a placed ordinal, before its word moves: for a
// total over several processes (a run's device level) that must hold every delta its words hold,
// whenever a word is read. Must be cheap and must not call CUDA or gpumem.
using LedgerMirror = void (*)(void* ctx, int ordinal, std::int64_t delta_bytes) noexcept;

struct LedgerPlacement {
  std::atomic<std::uint64_t>* words = nullptr;  // kLedgerOrdinals words (read with ledger_level)
  LedgerMirror mirror = nullptr;
  void* ctx = nullptr;
};

enum class LedgerStart {
  carry,  // each word starts at the level the process's counters have
  // At 0: a forked child holds nothing of its parent's. Called in the child's only thread, it
  // takes no lock (one a parent's thread held at the fork would never be let go).
  empty_in_forked_child,
};

// Moves each ordinal's level word to placement.words[ordinal], starting as `start` says; from
// then on every event, pool and graph change of that ordinal moves it there, after its mirror
// call. Place before the exact source starts (no event in flight: one that already found the old
// word would move that one). Placing again moves to the new words.
// @return false, placing nothing, when words or mirror is nullptr, or out of memory.
bool place_exact_ledger(const LedgerPlacement& placement, LedgerStart start) noexcept;

// Moves every level word back into the process, with its level (in_forked_child: as above, in a
// forked child's only thread). An event that had already found a placed word still moves it, and
// calls its mirror, once.
void unplace_exact_ledger(bool in_forked_child = false) noexcept;

// The level in bytes of a placed word.
std::int64_t ledger_level(std::uint64_t word) noexcept;

// Empties a placed word whose process no longer moves it (given back): returns the level it
// held. A late event's delta, landing after, is what a later take returns.
std::int64_t take_ledger_level(std::atomic<std::uint64_t>& word) noexcept;

}  // namespace gpumem::detail
