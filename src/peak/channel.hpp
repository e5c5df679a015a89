// The peak engine of one (device, source) stream of events.
//
// Why an event is O(1) whatever the number of live counters: an event only moves the channel's
// level and raises the channel's "epoch peak" (two atomics, no lock). Counters never see events;
// they see epochs. An epoch ends at every checkpoint (a counter starting, resetting or being
// destroyed), and only then, under the channel's control mutex, is the ending epoch's peak folded
// into every live counter's stored peak (O(live counters), paid by the rare control operation, not
// by the hot path). A counter's peak is then max(its folded peak, the running epoch's peak).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace gpumem::peak {

// A counter's private state inside a channel, in the channel's level units.
struct CounterSlot {
  std::int64_t start_level = 0;  // the level when it started or was last reset
  std::int64_t folded_peak = 0;  // the highest level of the epochs that ended since then
};

struct LevelReading {
  std::int64_t start = 0;
  std::int64_t current = 0;
  std::int64_t peak = 0;
};

class alignas(64) Channel {
 public:
  // The hot path: an allocation (+) or free (-) of `delta` bytes.
  void add(std::int64_t delta) noexcept {
    raise_epoch_peak(level_.fetch_add(delta, std::memory_order_relaxed) + delta);
  }
  // The hot path of an absolute source (a sampler): the level is now `level`.
  void set_level(std::int64_t level) noexcept {
    level_.store(level, std::memory_order_relaxed);
    raise_epoch_peak(level);
  }
  std::int64_t level() const noexcept { return level_.load(std::memory_order_relaxed); }

  // Control operations: each takes the control mutex and costs O(live counters).
  void attach(CounterSlot& slot);
  void restart(CounterSlot& slot);
  void detach(CounterSlot& slot);
  LevelReading read(const CounterSlot& slot);
  std::size_t live_counters();

 private:
  static constexpr std::int64_t kNoPeak = std::numeric_limits<std::int64_t>::min();

  void raise_epoch_peak(std::int64_t level) noexcept {
    std::int64_t peak = epoch_peak_.load(std::memory_order_relaxed);
    while (level > peak &&
           !epoch_peak_.compare_exchange_weak(peak, level, std::memory_order_relaxed)) {
    }
  }
  // Ends the epoch: folds its peak into every live counter and starts a new one at the current
  // level, which it returns. Requires control_.
  std::int64_t checkpoint();

  std::atomic<std::int64_t> level_{0};
  std::atomic<std::int64_t> epoch_peak_{0};
  std::mutex control_;
  std::vector<CounterSlot*> live_;
};

}  // namespace gpumem::peak
