// What the exact source knows about each live block it saw allocated: address (or VMM handle)
// to size and device. On the per-allocation path, so: sharded, each shard behind its own tiny
// spin lock (held for a few probes), and an open-addressing table that allocates nothing per
// block. No lock is global, and threads allocating at once rarely meet in a shard.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
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
  // Inline (defined below): each allocation and free pays them, and a call's boundary costs the
  // CPU's window room for the next blocks' cache misses (docs/peaks.md).
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

  // A block in one word: the size in the low 55 bits, managed in bit 55, the device above.
  static constexpr std::uint64_t kSizeMask = (std::uint64_t{1} << 55) - 1;
  static constexpr std::uint64_t kManaged = std::uint64_t{1} << 55;
  static constexpr int kDeviceShift = 56;
  static std::uint64_t pack(const Block& block) noexcept {
    return (block.size & kSizeMask) | (block.managed ? kManaged : 0) |
           (std::uint64_t{static_cast<std::uint8_t>(block.device)} << kDeviceShift);
  }
  static Block unpack(std::uint64_t packed) noexcept {
    return Block{packed & kSizeMask,
                 static_cast<std::int8_t>(static_cast<std::uint8_t>(packed >> kDeviceShift)),
                 (packed & kManaged) != 0};
  }
  // Device addresses are aligned (256 B and more): mix the bits so that neighbours spread out.
  static constexpr std::uint64_t mix(std::uint64_t key) noexcept {
    return key * 0x9E3779B97F4A7C15ull;
  }

  class SpinLock {
   public:
    // Inline: every allocation and free takes one, almost always free.
    void lock() noexcept {
      if (!try_lock()) [[unlikely]]
        wait();
    }
    bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

   private:
    void wait() noexcept;  // taken: wait for it
    std::atomic<bool> locked_{false};
  };

  // Linear probing with backward-shift deletion: no tombstones, so lookups stay short. A slot is
  // 16 bytes (four to a cache line): the block is packed into one word. The table doubles past a
  // load of 3/8 and halves below 1/16 (to 16 slots at least), so that its memory follows the
  // live blocks both ways; the low load keeps most lookups at their first slot, which is what a
  // random churn of a million blocks pays for (a mispredicted probe costs the overlap of the next
  // block's cache miss). The common insert and erase run a few dozen instructions with no call:
  // growing, shrinking and shifting a cluster back are out of line.
  class Table {
   public:
    // The fast paths, under the shard's lock: try_insert() declines (false) when the table must
    // grow first (insert() then does both); try_clear() when the slot's cluster goes on or the
    // table must shrink (remove() then does it).
    bool try_insert(std::uint64_t key, std::uint64_t packed) noexcept {
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
    std::size_t locate(std::uint64_t key) const noexcept {  // its slot, or kNone
      if (size_ == 0) return kNone;
      for (std::size_t i = home(key);; i = (i + 1) & mask_) {
        if (slots_[i].key == key) return i;
        if (slots_[i].key == 0) return kNone;
      }
    }
    std::uint64_t block_at(std::size_t slot) const noexcept { return slots_[slot].block; }
    bool try_clear(std::size_t slot) noexcept {
      if (slots_[(slot + 1) & mask_].key != 0 || size_ <= shrink_below_) [[unlikely]]
        return false;
      // Its cluster ends here and the table keeps its size: nothing to shift, nothing to move.
      slots_[slot] = Slot{};
      --size_;
      return true;
    }
    // The whole of each: growing first, or shifting the cluster back and shrinking after.
    void insert(std::uint64_t key, std::uint64_t packed);
    void remove(std::size_t slot) noexcept;
    std::optional<std::uint64_t> erase(std::uint64_t key) noexcept;

    void clear() noexcept;
    std::size_t size() const noexcept { return size_; }
    std::size_t memory_bytes() const noexcept { return slot_count() * sizeof(Slot); }
    template <class Fn>
    void for_each(Fn&& fn) const {
      for (std::size_t i = 0; i < slot_count(); ++i) {
        if (slots_[i].key != 0) fn(slots_[i].key, unpack(slots_[i].block));
      }
    }
    static constexpr std::size_t kNone = ~std::size_t{0};

   private:
    struct Slot {
      std::uint64_t key = 0;    // 0: empty
      std::uint64_t block = 0;  // pack()ed
    };
    std::size_t slot_count() const noexcept { return slots_ ? mask_ + 1 : 0; }
    std::size_t home(std::uint64_t key) const noexcept {
      // The shard used the top 6 bits of the mix; the table uses the ones just below. High
      // bits: a product's low bits keep the key's trailing zeros, and large blocks are aligned
      // to 2 MiB and more, which would leave most home slots unused.
      return static_cast<std::size_t>(mix(key) >> shift_) & mask_;
    }
    void resize(std::size_t slots);

    std::unique_ptr<Slot[]> slots_;
    std::size_t mask_ = 0;  // slots - 1
    std::size_t size_ = 0;
    std::size_t grow_at_ = 0;       // the size past which the table doubles (3/8 of its slots)
    std::size_t shrink_below_ = 0;  // the size below which it halves (1/16; 0 at 16 slots)
    int shift_ = 58;  // home(): the mix's bits below the shard's, as many as the table has
  };

  struct alignas(64) Shard {
    mutable SpinLock lock;
    Table table;
  };
  Shard& shard(std::uint64_t key) const noexcept { return shards_[(mix(key) >> 58) % kShards]; }
  // The paths off the allocation path's line (a shard's lock taken by another thread, a table
  // that grows or shrinks or a cluster shifted back), so that the common path saves no
  // registers: each is its tail call. erase_at() is called with the lock held, and releases it.
  static void insert_slow(Shard& target, std::uint64_t key, std::uint64_t packed);
  static std::optional<Block> erase_slow(Shard& target, std::uint64_t key) noexcept;
  static std::optional<Block> erase_at(Shard& target, std::size_t slot) noexcept;

  mutable std::array<Shard, kShards> shards_;
};

[[gnu::always_inline]] inline void AddressMap::insert(std::uint64_t key, Block block) {
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

[[gnu::always_inline]] inline std::optional<Block> AddressMap::erase(std::uint64_t key) {
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

}  // namespace gpumem::peak
