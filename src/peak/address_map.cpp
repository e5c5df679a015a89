#include "peak/address_map.hpp"

#include <bit>
#include <mutex>
#include <thread>
#include <utility>

#include "support/linear_probing.hpp"

namespace gpumem::peak {
namespace {

// Device addresses are aligned (256 B and more): mix the bits so that neighbours spread out.
constexpr std::uint64_t mix(std::uint64_t key) noexcept {
  return key * 0x9E3779B97F4A7C15ull;
}

}  // namespace

void AddressMap::SpinLock::wait() noexcept {
  while (locked_.exchange(true, std::memory_order_acquire)) {
    // A holder only probes a few slots, unless it is growing its table: then give way.
    while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
}

constexpr std::uint64_t kSizeMask = (std::uint64_t{1} << 55) - 1;
constexpr std::uint64_t kManaged = std::uint64_t{1} << 55;
constexpr int kDeviceShift = 56;

std::uint64_t AddressMap::pack(const Block& block) noexcept {
  return (block.size & kSizeMask) | (block.managed ? kManaged : 0) |
         (std::uint64_t{static_cast<std::uint8_t>(block.device)} << kDeviceShift);
}

Block AddressMap::unpack(std::uint64_t packed) noexcept {
  return Block{packed & kSizeMask,
               static_cast<std::int8_t>(static_cast<std::uint8_t>(packed >> kDeviceShift)),
               (packed & kManaged) != 0};
}

std::size_t AddressMap::Table::home(std::uint64_t key) const noexcept {
  // The shard used the top 6 bits of the mix; the table uses the ones just below. High bits:
  // a product's low bits keep the key's trailing zeros, and large blocks are aligned to 2 MiB
  // and more, which would leave most home slots unused.
  return static_cast<std::size_t>(mix(key) >> shift_) & mask_;
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

// Inline in AddressMap's own: the allocation path's (this file is their only user).
[[gnu::always_inline]] inline bool AddressMap::Table::try_insert(std::uint64_t key,
                                                                 std::uint64_t packed) noexcept {
  if (size_ >= grow_at_) [[unlikely]]
    return false;
  for (std::size_t i = home(key);; i = (i + 1) & mask_) {
    if (slots_[i].key == key) {
      slots_[i].block = packed;
      return true;
    }
    if (slots_[i].key == 0) {
      slots_[i] = {key, packed};
      ++size_;
      return true;
    }
  }
}

// The table's growth, out of the allocation path's line.
[[gnu::noinline]] void AddressMap::Table::insert(std::uint64_t key, std::uint64_t packed) {
  if (try_insert(key, packed)) return;
  resize(slots_ ? slot_count() * 2 : 16);
  try_insert(key, packed);
}

[[gnu::always_inline]] inline std::size_t AddressMap::Table::locate(
    std::uint64_t key) const noexcept {
  if (size_ == 0) return kNone;
  for (std::size_t i = home(key);; i = (i + 1) & mask_) {
    if (slots_[i].key == key) return i;
    if (slots_[i].key == 0) return kNone;
  }
}

[[gnu::always_inline]] inline bool AddressMap::Table::try_clear(std::size_t slot) noexcept {
  if (slots_[(slot + 1) & mask_].key != 0 || size_ <= shrink_below_) [[unlikely]]
    return false;
  // Its cluster ends here and the table keeps its size: nothing to shift, nothing to move.
  slots_[slot] = Slot{};
  --size_;
  return true;
}

[[gnu::noinline]] void AddressMap::Table::remove(std::size_t slot) noexcept {
  support::erase_by_backward_shift(slots_.get(), mask_, slot,
                                   [this](std::uint64_t key) { return home(key); });
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

AddressMap::Shard& AddressMap::shard(std::uint64_t key) const noexcept {
  return shards_[(mix(key) >> 58) % kShards];
}

void AddressMap::insert(std::uint64_t key, Block block) {
  if (key == 0) return;
  Shard& target = shard(key);
  const std::uint64_t packed = pack(block);
  if (target.lock.try_lock()) [[likely]] {
    const bool inserted = target.table.try_insert(key, packed);
    target.lock.unlock();
    if (inserted) [[likely]]
      return;
  }
  insert_slow(target, key, packed);
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

std::optional<Block> AddressMap::erase(std::uint64_t key) {
  if (key == 0) return std::nullopt;
  Shard& target = shard(key);
  if (!target.lock.try_lock()) [[unlikely]]
    return erase_slow(target, key);
  const std::size_t slot = target.table.locate(key);
  if (slot == Table::kNone) {
    target.lock.unlock();
    return std::nullopt;
  }
  const std::uint64_t packed = target.table.block_at(slot);
  if (!target.table.try_clear(slot)) [[unlikely]]
    return erase_at(target, slot);
  target.lock.unlock();
  return unpack(packed);
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
