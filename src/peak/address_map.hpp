// What the exact source knows about each live block it saw allocated: address (or VMM handle)
// to size and device. On the per-allocation path, so: sharded, each shard behind its own tiny
// spin lock (held for a few probes), and an open-addressing table that allocates nothing per
// block. No lock is global, and threads allocating at once rarely meet in a shard.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpumem::peak {

// The map keeps a size below 2^55 bytes (32 PiB, as the free's stash does) and a device in
// -128…127.
struct Block {
  std::uint64_t size = 0;
  int device = 0;
  bool managed = false;
};

class AddressMap {
 public:
  // Key 0 is never a live block (no allocation succeeds at address 0, no handle is 0): ignored.
  void insert(std::uint64_t key, Block block);
  std::optional<Block> find(std::uint64_t key) const;
  std::optional<Block> erase(std::uint64_t key);
  // Takes out every block of a device (its context is being destroyed, and with it they are);
  // returns them.
  std::vector<Block> erase_device(int device);
  void clear();
  std::size_t size() const;
  // The bytes its tables take now (they grow with the live blocks and shrink as they go).
  std::size_t memory_bytes() const;
  // Calls fn(key, block) for every block, one shard locked at a time.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (Shard& each : shards_) {
      each.lock.lock();
      try {
        each.table.for_each(fn);
      } catch (...) {
        each.lock.unlock();
        throw;
      }
      each.lock.unlock();
    }
  }

 private:
  static constexpr std::size_t kShards = 64;

  class SpinLock {
   public:
    // Inline: every allocation and free takes one, almost always free.
    void lock() noexcept {
      if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
        return;
      wait();
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

   private:
    void wait() noexcept;  // taken: wait for it
    std::atomic<bool> locked_{false};
  };

  // Linear probing with backward-shift deletion: no tombstones, so lookups stay short. A slot is
  // 16 bytes (four to a cache line): the block is packed into one word. The table doubles past a
  // load of 3/8 and halves below 1/16 (to 16 slots at least), so that its memory follows the
  // live blocks both ways; the
  // low load keeps most lookups at their first slot, which is what a random churn of a million
  // blocks pays for (a mispredicted probe costs the overlap of the next block's cache miss).
  class Table {
   public:
    void insert(std::uint64_t key, Block block);
    std::optional<Block> find(std::uint64_t key) const;
    std::optional<Block> erase(std::uint64_t key);
    void clear() noexcept;
    std::size_t size() const noexcept { return size_; }
    std::size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(Slot); }
    template <class Fn>
    void for_each(Fn&& fn) const {
      for (const Slot& slot : slots_) {
        if (slot.key != 0) fn(slot.key, unpack(slot.block));
      }
    }

   private:
    struct Slot {
      std::uint64_t key = 0;    // 0: empty
      std::uint64_t block = 0;  // pack()ed
    };
    static std::uint64_t pack(const Block& block) noexcept;
    static Block unpack(std::uint64_t packed) noexcept;
    std::size_t home(std::uint64_t key) const noexcept;
    void resize(std::size_t slots);

    std::vector<Slot> slots_;
    std::size_t size_ = 0;
    int shift_ = 58;  // home(): the mix's bits below the shard's, as many as the table has
  };

  struct alignas(64) Shard {
    mutable SpinLock lock;
    Table table;
  };
  Shard& shard(std::uint64_t key) const noexcept;

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace gpumem::peak
