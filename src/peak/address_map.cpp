#include "peak/address_map.hpp"

#include <bit>
#include <mutex>
#include <thread>

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

std::size_t AddressMap::Table::home(std::uint64_t key) const noexcept {
  // The shard used the top 6 bits of the mix; the table uses the ones just below. High bits:
  // a product's low bits keep the key's trailing zeros, and large blocks are aligned to 2 MiB
  // and more, which would leave most home slots unused.
  const int bits = std::countr_zero(slots_.size());
  return static_cast<std::size_t>(mix(key) >> (58 - bits)) & (slots_.size() - 1);
}

void AddressMap::Table::grow() {
  std::vector<Slot> old(slots_.empty() ? 16 : slots_.size() * 2);
  old.swap(slots_);
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.key != 0) insert(slot.key, slot.block);
  }
}

// Inline in AddressMap's own: the allocation path's (this file is their only user).
[[gnu::always_inline]] inline void AddressMap::Table::insert(std::uint64_t key, Block block) {
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // load factor at most 3/4
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    if (slots_[i].key == key) {
      slots_[i].block = block;
      return;
    }
    if (slots_[i].key == 0) {
      slots_[i] = {key, block};
      ++size_;
      return;
    }
  }
}

const Block* AddressMap::Table::find(std::uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key); slots_[i].key != 0; i = (i + 1) & mask) {
    if (slots_[i].key == key) return &slots_[i].block;
  }
  return nullptr;
}

[[gnu::always_inline]] inline std::optional<Block> AddressMap::Table::erase(std::uint64_t key) {
  if (slots_.empty()) return std::nullopt;
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = home(key);
  while (slots_[hole].key != key) {
    if (slots_[hole].key == 0) return std::nullopt;
    hole = (hole + 1) & mask;
  }
  const Block erased = slots_[hole].block;
  // Shift later members of the cluster back over the hole when their home allows it.
  for (std::size_t next = (hole + 1) & mask; slots_[next].key != 0; next = (next + 1) & mask) {
    const std::size_t wanted = home(slots_[next].key);
    const bool movable =
        hole <= next ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next);
    if (movable) {
      slots_[hole] = slots_[next];
      hole = next;
    }
  }
  slots_[hole] = Slot{};
  --size_;
  return erased;
}

void AddressMap::Table::clear() noexcept {
  slots_.clear();
  size_ = 0;
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
  if (const Block* found = target.table.find(key)) return *found;
  return std::nullopt;
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
