// What the exact source knows about each live block it saw allocated: address (or VMM handle)
// to size and device. Sharded, each shard with its own small mutex, so threads allocating at
// once rarely contend and no lock is global.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace gpumem::peak {

struct Block {
  std::uint64_t size = 0;
  int device = 0;
  bool managed = false;
};

class AddressMap {
 public:
  void insert(std::uint64_t key, Block block);
  std::optional<Block> find(std::uint64_t key) const;
  std::optional<Block> erase(std::uint64_t key);
  void clear();
  std::size_t size() const;

 private:
  static constexpr std::size_t kShards = 64;
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::uint64_t, Block> blocks;
  };
  Shard& shard(std::uint64_t key) const noexcept;

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace gpumem::peak
