#include "peak/channel.hpp"

#include <algorithm>

namespace gpumem::peak {

void Channel::set_level(std::int64_t level) noexcept {
  // An absolute source (a sampler's channel) is never placed: the mirror sees deltas only.
  std::atomic<std::uint64_t>& target = this->word();
  std::uint64_t word = target.load(std::memory_order_relaxed);
  std::uint64_t next = with_level(word, level);
  while (!target.compare_exchange_weak(word, next, std::memory_order_relaxed)) {
    next = with_level(word, level);
  }
  settle({next});
}

void Channel::settle_late(Step step) noexcept {
  const std::lock_guard lock(control_);
  const std::uint64_t tag = tag_of(step.word);
  const std::int64_t level = level_of(step.word);
  constexpr std::uint64_t kTagMask = ~std::uint64_t{0} >> kLevelBits;
  if (tag == (epoch_ & kTagMask)) {
    // The epoch opened by the checkpoint this event raced with: its peak is settled now.
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (level_of(peak) < level &&
           !peak_.compare_exchange_weak(peak, step.word, std::memory_order_relaxed)) {
    }
    return;
  }
  // An epoch that has ended: the counters live in it are those that started in it or before.
  const std::uint64_t epoch = epoch_ - ((epoch_ - tag) & kTagMask);
  for (CounterSlot* slot : live_) {
    if (slot->start_epoch <= epoch) slot->folded_peak = std::max(slot->folded_peak, level);
  }
}

std::int64_t Channel::checkpoint() {
  // One read-modify-write of the level word splits the events exactly: those before it belong
  // to the ending epoch, those after to the new one.
  const std::uint64_t before = word().fetch_add(kTagOne, std::memory_order_relaxed);
  ++epoch_;
  const std::int64_t current = level_of(before);
  const std::uint64_t ended =
      peak_.exchange(with_level(before + kTagOne, current), std::memory_order_relaxed);
  const std::int64_t ended_peak = std::max(level_of(ended), current);
  for (CounterSlot* slot : live_) slot->folded_peak = std::max(slot->folded_peak, ended_peak);
  return current;
}

void Channel::place(const Home* home, bool carry_level, bool locked) noexcept {
  std::unique_lock lock(control_, std::defer_lock);
  if (locked) lock.lock();
  std::atomic<std::uint64_t>* target = home != nullptr ? home->word : &word_;
  const std::uint64_t now = word().load(std::memory_order_relaxed);
  target->store(carry_level ? now : with_level(now, 0), std::memory_order_relaxed);
  if (home != nullptr) placed_.store(home, std::memory_order_release);
  level_.store(target, std::memory_order_release);
}

void Channel::start(CounterSlot& slot) {
  const std::int64_t current = checkpoint();
  slot.start_level = current;
  slot.folded_peak = current;
  slot.start_epoch = epoch_;
}

void Channel::attach(CounterSlot& slot) {
  const std::lock_guard lock(control_);
  start(slot);
  live_.push_back(&slot);
}

void Channel::restart(CounterSlot& slot) {
  const std::lock_guard lock(control_);
  start(slot);
}

void Channel::detach(CounterSlot& slot) {
  const std::lock_guard lock(control_);
  const auto found = std::find(live_.begin(), live_.end(), &slot);
  if (found != live_.end()) {
    *found = live_.back();
    live_.pop_back();
  }
}

LevelReading Channel::read(const CounterSlot& slot) {
  const std::lock_guard lock(control_);
  // Under the mutex both words carry the running epoch's tag. An event may have moved the level
  // without having raised the epoch peak yet: including the level keeps peak >= current.
  const std::int64_t current = level_of(word().load(std::memory_order_relaxed));
  const std::int64_t epoch = level_of(peak_.load(std::memory_order_relaxed));
  return {slot.start_level, current, std::max({slot.folded_peak, epoch, current})};
}

std::size_t Channel::live_counters() {
  const std::lock_guard lock(control_);
  return live_.size();
}

}  // namespace gpumem::peak
