#include "peak/channel.hpp"

#include <algorithm>

namespace gpumem::peak {

std::int64_t Channel::checkpoint() {
  // Clearing the epoch peak before reading the level means that an event racing with the
  // checkpoint lands in the new epoch: the live counters still see it (through the epoch peak),
  // and none is lost between the two epochs.
  const std::int64_t ended = epoch_peak_.exchange(kNoPeak, std::memory_order_acq_rel);
  const std::int64_t current = level_.load(std::memory_order_acquire);
  raise_epoch_peak(current);
  if (ended != kNoPeak) {
    for (CounterSlot* slot : live_) slot->folded_peak = std::max(slot->folded_peak, ended);
  }
  return current;
}

void Channel::attach(CounterSlot& slot) {
  const std::lock_guard lock(control_);
  const std::int64_t current = checkpoint();
  slot.start_level = current;
  slot.folded_peak = current;
  live_.push_back(&slot);
}

void Channel::restart(CounterSlot& slot) {
  const std::lock_guard lock(control_);
  const std::int64_t current = checkpoint();
  slot.start_level = current;
  slot.folded_peak = current;
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
  // An event may have moved the level without having raised the epoch peak yet: including the
  // level keeps peak >= current.
  const std::int64_t current = level_.load(std::memory_order_acquire);
  const std::int64_t epoch = epoch_peak_.load(std::memory_order_acquire);
  return {slot.start_level, current, std::max({slot.folded_peak, epoch, current})};
}

std::size_t Channel::live_counters() {
  const std::lock_guard lock(control_);
  return live_.size();
}

}  // namespace gpumem::peak
