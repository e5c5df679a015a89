// The peak engine of one (device, source) stream of events.
//
// Why an event is O(1) whatever the number of live counters: an event only moves the channel's
// level and raises the channel's "epoch peak" (two atomics, no lock). Counters never see events;
// they see epochs. An epoch ends at every checkpoint (a counter starting or resetting), and only
// then, under the channel's control mutex, is the ending epoch's peak folded into every live
// counter's stored peak (O(live counters), paid by the rare control operation, not by the hot
// path). A counter's peak is then max(its folded peak, the running epoch's peak).
//
// Which epoch an event belongs to is decided by one atomic word: the level shares its word with
// the epoch's tag, and a checkpoint closes an epoch by incrementing that tag with a read-modify-
// write of the same word. All read-modify-writes of one atomic are totally ordered, so each
// event's fetch_add returns, with its level, exactly the epoch it happened in: an event ordered
// before a counter's start can never raise that counter's peak, and one ordered after it always
// does. The epoch peak carries the tag too; an event whose epoch closed before it could raise the
// peak (it was preempted between its two atomics) finds a different tag and folds its level
// under the control mutex into exactly the counters that were live in its epoch (rare).
//
// Where the level lives: the channel's own word, or a word a ledger placed elsewhere (`gpumem run`
// places the exact stream's in the shared counters file, exact_ledger.hpp), with a mirror that is
// told each delta before the placed word moves. An event that moves a placed word always calls a
// mirror first, even one that raced the word's return home.
//
// Memory orders: every atomic here is relaxed but two. Where the level is (level_) is loaded with
// acquire, so that a placed word is seen with the level it was given. An event's move of the level
// is a release: a reader in another process that sees the level an event reached sees what the
// event's thread did before it (`gpumem run`'s monitor: the call's ENTER, docs/peaks.md); on x86 a
// locked add is that already. Within the process, no thread infers anything about one atomic from
// another without the control mutex: the level word and the peak word are each only
// read-modified-written (one total order per word, and a read-modify-write reads the latest
// value), and counters' stored state is touched only under the mutex. Coherence alone then
// gives each reader the latest value of each word or a later one, on any CPU (x86, aarch64 /
// Grace Hopper, POWER).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "gpumem/internal/exact_ledger.hpp"

namespace gpumem::peak {

// A counter's private state inside a channel, in the channel's level units.
struct CounterSlot {
  std::int64_t start_level = 0;   // the level when it started or was last reset
  std::int64_t folded_peak = 0;   // the highest level of the epochs that ended since then
  std::uint64_t start_epoch = 0;  // the epoch its start or last reset opened
};

struct LevelReading {
  std::int64_t start = 0;
  std::int64_t current = 0;
  std::int64_t peak = 0;
};

class alignas(64) Channel {
 public:
  // Told each delta of a placed level before the word moves (key: the placement's own name for
  // this channel, a CUDA ordinal), with how the placement's bracketed level moves; returns that
  // level (exact_ledger.hpp).
  using Mirror = detail::LedgerMirror;
  using Bracket = detail::LedgerBracket;
  struct Home {
    std::atomic<std::uint64_t>* word;
    Mirror mirror;  // never nullptr
    void* ctx;
    int key;
  };

  // Levels are bytes in [-kLevelRange, kLevelRange): ±32 TiB.
  static constexpr int kLevelBits = 46;
  static constexpr std::int64_t kLevelRange = std::int64_t{1} << (kLevelBits - 1);

  // The level word after an event moved it: its epoch tag and the level it reached.
  struct Step {
    std::uint64_t word;
  };

  // The hot path: an allocation (+) or free (-) of `delta` bytes. A fall cannot make a peak, so
  // a free is a single fetch_add.
  [[gnu::always_inline]] void add(std::int64_t delta) noexcept {
    add(delta, {delta, detail::kBracketAtLevel});
  }
  // The same, where a placed level's bracketed twin moves as `bracket` says (an allocation's EXIT,
  // a free's ENTER: their calls' other halves move it, bracket()).
  [[gnu::always_inline]] void add(std::int64_t delta, Bracket bracket) noexcept {
    const Step step = move(delta, bracket);
    if (delta > 0) settle(step);
  }
  // An event in its two halves, as add() does it: move the level, then raise the epoch peak.
  [[gnu::always_inline]] Step move(std::int64_t delta) noexcept {
    return move(delta, {delta, detail::kBracketAtLevel});
  }
  [[gnu::always_inline]] Step move(std::int64_t delta, Bracket bracket) noexcept {
    std::atomic<std::uint64_t>* level = level_.load(std::memory_order_acquire);
    if (level != &word_) [[unlikely]] {
      // Placed: the home that placed `level` or a later one (placed_ is stored before level_,
      // and never cleared), whose mirror hears every delta of every word placed.
      const Home* home = placed_.load(std::memory_order_acquire);
      home->mirror(home->ctx, home->key, delta, bracket);
    }
    return {level->fetch_add(static_cast<std::uint64_t>(delta), std::memory_order_release) +
            static_cast<std::uint64_t>(delta)};
  }
  // Moves only a placed level's bracketed twin (an allocation's ENTER, a free's EXIT): the level
  // it reached, detail::kUnbracketed when the level is not placed (no process-wide total keeps
  // one: the process's own counters count at the events alone).
  [[gnu::always_inline]] std::int64_t bracket(Bracket bracket) noexcept {
    if (level_.load(std::memory_order_acquire) == &word_) return detail::kUnbracketed;
    const Home* home = placed_.load(std::memory_order_acquire);
    return home->mirror(home->ctx, home->key, 0, bracket);
  }
  [[gnu::always_inline]] void settle(Step step) noexcept {
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (tag_of(peak) == tag_of(step.word)) {
      if (level_of(peak) >= level_of(step.word)) return;
      if (peak_.compare_exchange_weak(peak, step.word, std::memory_order_relaxed)) return;
    }
    settle_late(step);
  }
  // The hot path of an absolute source (a sampler): the level is now `level`.
  void set_level(std::int64_t level) noexcept;
  std::int64_t level() const noexcept { return level_of(word().load(std::memory_order_relaxed)); }
  // The level an event's step reached.
  static std::int64_t level(Step step) noexcept { return level_of(step.word); }

  // The level a word of this format holds (a placed word, read by another process).
  static std::int64_t level_of_word(std::uint64_t word) noexcept { return level_of(word); }
  // The same word with its level set to 0 (its tag kept).
  static std::uint64_t emptied(std::uint64_t word) noexcept { return with_level(word, 0); }

  // Moves the level to `home` (nullptr: back to the channel's own word). The new word starts at
  // the level the channel had (`carry_level`) or at 0, with the running epoch's tag. `home` must
  // outlive every event: it is never freed. An event that already loaded the old word finishes
  // there (a placement is made before events start, and taken back as the process exits).
  // `locked`: under the control mutex; false only in a forked child, whose only thread must not
  // wait for a mutex a parent's thread held at the fork.
  void place(const Home* home, bool carry_level, bool locked = true) noexcept;

  // Control operations: each takes the control mutex and costs O(live counters).
  void attach(CounterSlot& slot);
  void restart(CounterSlot& slot);
  void detach(CounterSlot& slot);
  LevelReading read(const CounterSlot& slot);
  std::size_t live_counters();

 private:
  static constexpr std::uint64_t kLevelMask = (std::uint64_t{1} << kLevelBits) - 1;
  static constexpr std::uint64_t kTagOne = std::uint64_t{1} << kLevelBits;
  static constexpr std::uint64_t kBias = static_cast<std::uint64_t>(kLevelRange);

  static std::uint64_t tag_of(std::uint64_t word) noexcept { return word >> kLevelBits; }
  static std::int64_t level_of(std::uint64_t word) noexcept {
    return static_cast<std::int64_t>(word & kLevelMask) - kLevelRange;
  }
  static std::uint64_t with_level(std::uint64_t word, std::int64_t level) noexcept {
    return (word & ~kLevelMask) | ((static_cast<std::uint64_t>(level) + kBias) & kLevelMask);
  }

  // An event whose tag differs from the epoch peak's: its epoch ended (or is being opened) by a
  // checkpoint it raced with.
  void settle_late(Step step) noexcept;
  // Ends the epoch: folds its peak into every live counter and starts a new one at the current
  // level, which it returns. Requires control_.
  std::int64_t checkpoint();
  // Starts `slot` at the current level, in a new epoch. Requires control_.
  void start(CounterSlot& slot);
  std::atomic<std::uint64_t>& word() const noexcept {
    return *level_.load(std::memory_order_acquire);
  }

  std::atomic<std::uint64_t> word_{kBias};  // tag 0, level 0: the level, unless placed elsewhere
  std::atomic<std::atomic<std::uint64_t>*> level_{&word_};  // where the level is: word_ or placed
  std::atomic<std::uint64_t> peak_{kBias};                  // tag 0, peak 0
  std::atomic<const Home*> placed_{nullptr};                // the last placement, never cleared
  std::mutex control_;
  std::uint64_t epoch_ = 0;  // the full epoch number; the tags are its low bits
  std::vector<CounterSlot*> live_;
};

}  // namespace gpumem::peak
