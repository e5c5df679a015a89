// Where the exact source keeps each CUDA ordinal's level: the part of the process footprint that
// its events, pools and graphs account for. By default in the process; `gpumem run` places every
// ordinal's level word in the process's slot of the run's counters file, so that the monitor
// reads the very words this process's own counters read, and each event moves its level once.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::detail {

// The ordinals a ledger has words for: 0 to kLedgerOrdinals - 1, those the exact source counts.
inline constexpr int kLedgerOrdinals = 64;

// How an event moves the placement's bracketed level (docs/peaks.md, "Calls in flight
// together"): the level plus the bytes of the block calls in flight. An allocation raises it at
// its ENTER by the size asked for, before the driver charges anything, and corrects it at its EXIT
// (to what was taken, or back when it failed); a free lowers it at its EXIT, after the driver
// released the block. The level itself counts an allocation at its EXIT and a free at its ENTER.
// So at every moment the level is at most what the device holds of the events and the bracketed
// level at least that: each one's peak bounds the device's from its side.
struct LedgerBracket {
  std::int64_t delta = 0;  // what the bracketed level moves by
  // What its peak is raised to: kBracketAtLevel, where `delta` took it (for a rise); kBracketNoPeak
  // none; else that level (an allocation's EXIT: the bracketed level its ENTER reached).
  std::int64_t peak = 0;
};
inline constexpr std::int64_t kBracketAtLevel = INT64_MIN;
inline constexpr std::int64_t kBracketNoPeak = INT64_MIN + 1;
// What a move of the bracketed level returns where no mirror keeps one (an unplaced level).
inline constexpr std::int64_t kUnbracketed = INT64_MIN;

// Called on the event's thread with each delta of a placed ordinal, before its word moves: for a
// total over several processes (a run's device level) that must hold every delta its words hold,
// whenever a word is read; and with `bracket`, how the total's bracketed level moves (a call's
// ENTER moves only that one: delta_bytes 0). Returns the bracketed level after the move. Must be
// cheap and must not call CUDA or gpumem.
using LedgerMirror = std::int64_t (*)(void* ctx, int ordinal, std::int64_t delta_bytes,
                                      LedgerBracket bracket) noexcept;

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
