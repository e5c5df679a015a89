#include "peak/address_map.hpp"

namespace gpumem::peak {

AddressMap::Shard& AddressMap::shard(std::uint64_t key) const noexcept {
  // Device addresses are aligned (256 B and more): mix the bits so neighbours spread out.
  std::uint64_t mixed = key * 0x9E3779B97F4A7C15ull;
  return shards_[(mixed >> 58) % kShards];
}

void AddressMap::insert(std::uint64_t key, Block block) {
  Shard& target = shard(key);
  const std::lock_guard lock(target.mutex);
  target.blocks.insert_or_assign(key, block);
}

std::optional<Block> AddressMap::find(std::uint64_t key) const {
  Shard& target = shard(key);
  const std::lock_guard lock(target.mutex);
  const auto found = target.blocks.find(key);
  if (found == target.blocks.end()) return std::nullopt;
  return found->second;
}

std::optional<Block> AddressMap::erase(std::uint64_t key) {
  Shard& target = shard(key);
  const std::lock_guard lock(target.mutex);
  const auto found = target.blocks.find(key);
  if (found == target.blocks.end()) return std::nullopt;
  Block block = found->second;
  target.blocks.erase(found);
  return block;
}

void AddressMap::clear() {
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.mutex);
    each.blocks.clear();
  }
}

std::size_t AddressMap::size() const {
  std::size_t total = 0;
  for (Shard& each : shards_) {
    const std::lock_guard lock(each.mutex);
    total += each.blocks.size();
  }
  return total;
}

}  // namespace gpumem::peak
