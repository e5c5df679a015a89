#include "peak/address_map.hpp"

#include <bit>
#include <mutex>
#include <thread>
#include <utility>

#include "support/linear_probing.hpp"

namespace gpumem::peak {

void AddressMap::SpinLock::wait() noexcept {
  while (locked_.exchange(true, std::memory_order_acquire)) {
    // A holder only probes a few slots, unless it is growing its table: then give way.
    while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
}

void AddressMap::Table::resize(std::size_t slots) {
  const std::size_t old_count = slot_count();
  const std::unique_ptr<Slot[]> old = std::exchange(slots_, std::make_unique<Slot[]>(slots));
  mask_ = slots - 1;
  shift_ = 58 - std::countr_zero(slots);
  grow_at_ = slots / 8 * 3;
  shrink_below_ = slots > 16 ? slots / 16 : 0;
  for (std::size_t each = 0; each < old_count; ++each) {
    const Slot& slot = old[each];
    if (slot.key == 0) continue;
    std::size_t i = home(slot.key);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = slot;
  }
}

// The table's growth, out of the allocation path's line.
[[gnu::noinline]] void AddressMap::Table::insert(std::uint64_t key, std::uint64_t packed) {
  if (try_insert(key, packed)) return;
  resize(slots_ ? slot_count() * 2 : 16);
  try_insert(key, packed);
}

[[gnu::noinline]] void AddressMap::Table::remove(std::size_t slot) noexcept {
  support::erase_by_backward_shift(
      slots_.get(), slot, [mask = mask_](std::size_t i) { return (i + 1) & mask; },
      [this](std::uint64_t key) { return home(key); }, [](std::size_t, std::size_t) {});
  --size_;
  // Down to 16 slots, never to none: a block allocated and freed again and again in an empty
  // shard must not cost an allocation each time.
  if (size_ < shrink_below_) {
    try {
      resize(slot_count() / 2);  // below 1/16: to 1/8
    } catch (...) {
      // No memory for the smaller table: the larger one stays, as correct.
    }
  }
}

std::optional<std::uint64_t> AddressMap::Table::erase(std::uint64_t key) noexcept {
  const std::size_t slot = locate(key);
  if (slot == kNone) return std::nullopt;
  const std::uint64_t packed = slots_[slot].block;
  if (!try_clear(slot)) remove(slot);
  return packed;
}

void AddressMap::Table::clear() noexcept {
  slots_.reset();
  mask_ = 0;
  size_ = 0;
  grow_at_ = 0;
  shrink_below_ = 0;
  shift_ = 58;
}

[[gnu::noinline]] void AddressMap::insert_slow(Shard& target, std::uint64_t key,
                                               std::uint64_t packed) {
  const std::lock_guard lock(target.lock);
  target.table.insert(key, packed);
}

std::optional<Block> AddressMap::find(std::uint64_t key) const {
  if (key == 0) return std::nullopt;
  Shard& target = shard(key);
  const std::lock_guard lock(target.lock);
  const std::size_t slot = target.table.locate(key);
  if (slot == Table::kNone) return std::nullopt;
  return unpack(target.table.block_at(slot));
}

[[gnu::noinline]] std::optional<Block> AddressMap::erase_slow(Shard& target,
                                                              std::uint64_t key) noexcept {
  const std::lock_guard lock(target.lock);
  const std::optional<std::uint64_t> packed = target.table.erase(key);
  if (!packed) return std::nullopt;
  return unpack(*packed);
}

[[gnu::noinline]] std::optional<Block> AddressMap::erase_at(Shard& target,
                                                            std::size_t slot) noexcept {
  const std::lock_guard lock(target.lock, std::adopt_lock);
  const std::uint64_t packed = target.table.block_at(slot);
  target.table.remove(slot);
  return unpack(packed);
}

void AddressMap::clear() {
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.lock);
    each.table.clear();
  }
}

std::size_t AddressMap::size() const {
  std::size_t total = 0;
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.lock);
    total += each.table.size();
  }
  return total;
}

std::size_t AddressMap::memory_bytes() const {
  std::size_t total = 0;
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.lock);
    total += each.table.memory_bytes();
  }
  return total;
}

std::vector<Block> AddressMap::erase_device(int device) {
  std::vector<Block> taken;
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.lock);
    std::vector<std::uint64_t> keys;
    each.table.for_each([&](std::uint64_t key, const Block& block) {
      if (block.device == device) keys.push_back(key);
    });
    for (const std::uint64_t key : keys) {
      if (const std::optional<std::uint64_t> packed = each.table.erase(key)) {
        taken.push_back(unpack(*packed));
      }
    }
  }
  return taken;
}

}  // namespace gpumem::peak
