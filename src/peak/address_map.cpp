#include "peak/address_map.hpp"

#include <bit>
#include <mutex>
#include <thread>

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

std::uint64_t AddressMap::Table::pack(const Block& block) noexcept {
  return (block.size & kSizeMask) | (block.managed ? kManaged : 0) |
         (std::uint64_t{static_cast<std::uint8_t>(block.device)} << kDeviceShift);
}

Block AddressMap::Table::unpack(std::uint64_t packed) noexcept {
  return Block{packed & kSizeMask,
               static_cast<std::int8_t>(static_cast<std::uint8_t>(packed >> kDeviceShift)),
               (packed & kManaged) != 0};
}

std::size_t AddressMap::Table::home(std::uint64_t key) const noexcept {
  // The shard used the top 6 bits of the mix; the table uses the ones just below. High bits:
  // a product's low bits keep the key's trailing zeros, and large blocks are aligned to 2 MiB
  // and more, which would leave most home slots unused.
  return static_cast<std::size_t>(mix(key) >> shift_) & (slots_.size() - 1);
}

void AddressMap::Table::resize(std::size_t slots) {
  std::vector<Slot> old(slots);
  old.swap(slots_);
  shift_ = 58 - std::countr_zero(slots);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.key == 0) continue;
    std::size_t i = home(slot.key);
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

// Inline in AddressMap's own: the allocation path's (this file is their only user).
[[gnu::always_inline]] inline void AddressMap::Table::insert(std::uint64_t key, Block block) {
  if ((size_ + 1) * 8 > slots_.size() * 3) resize(slots_.empty() ? 16 : slots_.size() * 2);
  const std::size_t mask = slots_.size() - 1;
  const std::uint64_t packed = pack(block);
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    if (slots_[i].key == key) {
      slots_[i].block = packed;
      return;
    }
    if (slots_[i].key == 0) {
      slots_[i] = {key, packed};
      ++size_;
      return;
    }
  }
}

std::optional<Block> AddressMap::Table::find(std::uint64_t key) const {
  if (slots_.empty()) return std::nullopt;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key); slots_[i].key != 0; i = (i + 1) & mask) {
    if (slots_[i].key == key) return unpack(slots_[i].block);
  }
  return std::nullopt;
}

[[gnu::always_inline]] inline std::optional<Block> AddressMap::Table::erase(std::uint64_t key) {
  if (slots_.empty()) return std::nullopt;
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = home(key);
  while (slots_[hole].key != key) {
    if (slots_[hole].key == 0) return std::nullopt;
    hole = (hole + 1) & mask;
  }
  const Block erased = unpack(slots_[hole].block);
  support::erase_by_backward_shift(slots_, hole, [this](std::uint64_t key) { return home(key); });
  --size_;
  // Down to 16 slots, never to none: a block allocated and freed again and again in an empty
  // shard must not cost an allocation each time.
  if (slots_.size() > 16 && size_ * 16 < slots_.size()) {
    try {
      resize(slots_.size() / 2);  // below 1/16: to 1/8
    } catch (...) {
      // No memory for the smaller table: the larger one stays, as correct.
    }
  }
  return erased;
}

void AddressMap::Table::clear() noexcept {
  std::vector<Slot>().swap(slots_);
  size_ = 0;
  shift_ = 58;
}

AddressMap::Shard& AddressMap::shard(std::uint64_t key) const noexcept {
  return shards_[(mix(key) >> 58) % kShards];
}

void AddressMap::insert(std::uint64_t key, Block block) {
  if (key == 0) return;
  Shard& target = shard(key);
  const std::lock_guard lock(target.lock);
  target.table.insert(key, block);
}

std::optional<Block> AddressMap::find(std::uint64_t key) const {
  Shard& target = shard(key);
  const std::lock_guard lock(target.lock);
  return target.table.find(key);
}

std::optional<Block> AddressMap::erase(std::uint64_t key) {
  if (key == 0) return std::nullopt;
  Shard& target = shard(key);
  const std::lock_guard lock(target.lock);
  return target.table.erase(key);
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
      if (std::optional<Block> block = each.table.erase(key)) taken.push_back(*block);
    }
  }
  return taken;
}

}  // namespace gpumem::peak
