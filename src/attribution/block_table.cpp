#include "attribution/block_table.hpp"

#include <algorithm>
#include <bit>

#include "support/linear_probing.hpp"

namespace gpumem::attribution {
namespace {

constexpr std::size_t kMinSlots = 16;

constexpr int kKindShift = 56;
constexpr std::uint64_t kBytesMask = (std::uint64_t{1} << kKindShift) - 1;

bool before(const auto& held, std::uint32_t version) noexcept {
  return held.version < version;
}

}  // namespace

BlockTable::Slot BlockTable::pack(std::uint64_t key, const BlockInfo& info,
                                  std::uint32_t born) noexcept {
  return {key, (info.bytes & kBytesMask) | std::uint64_t{info.kind} << kKindShift, info.time_ns,
          info.stack, born};
}

BlockInfo BlockTable::unpack(const Slot& slot) noexcept {
  return {slot.bytes_kind & kBytesMask, slot.time_ns, slot.stack,
          static_cast<std::uint8_t>(slot.bytes_kind >> kKindShift)};
}

std::size_t BlockTable::home(std::uint64_t key) const noexcept {
  // High bits of the product: device addresses are aligned, which the low bits would keep.
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
}

std::size_t BlockTable::position(std::uint64_t key) const noexcept {
  if (slots_.empty() || key == 0) return slots_.size();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key); slots_[i].key != 0; i = (i + 1) & mask) {
    if (slots_[i].key == key) return i;
  }
  return slots_.size();
}

void BlockTable::resize(std::size_t slots) {
  std::vector<Slot> old(slots);
  old.swap(slots_);
  shift_ = 64 - std::countr_zero(slots);
  const std::size_t mask = slots - 1;
  for (const Slot& slot : old) {
    if (slot.key == 0) continue;
    std::size_t i = home(slot.key);
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void BlockTable::remove_at(std::size_t hole) noexcept {
  support::erase_by_backward_shift(slots_, hole, [this](std::uint64_t key) { return home(key); });
  --size_;
  // Down to kMinSlots, never to none: a block allocated and freed again and again must not cost
  // an allocation each time.
  if (slots_.size() > kMinSlots && size_ * 16 < slots_.size() * 3) {
    try {
      resize(slots_.size() / 2);  // below 3/16 full: to 3/8
    } catch (...) {
      // No memory for the smaller table: the larger one stays, as correct.
    }
  }
}

bool BlockTable::seen(std::uint32_t born, std::uint32_t died) const noexcept {
  const auto first = std::lower_bound(held_.begin(), held_.end(), born, before<Held>);
  return first != held_.end() && first->version < died;
}

std::size_t BlockTable::held(Snapshot snapshot) const noexcept {
  const auto it =
      std::lower_bound(held_.begin(), held_.end(), snapshot,
                       [](const Held& each, Snapshot handle) { return each.handle < handle; });
  return it != held_.end() && it->handle == snapshot ? static_cast<std::size_t>(it - held_.begin())
                                                     : held_.size();
}

void BlockTable::retire(const Slot& slot) {
  if (!seen(slot.born, version_)) return;
  retired_.push_back({slot, version_});
  if (retired_.size() >= prune_at_) prune();
}

void BlockTable::prune() noexcept {
  std::erase_if(retired_,
                [this](const Retired& each) { return !seen(each.block.born, each.died); });
  prune_at_ = std::max<std::size_t>(64, retired_.size() * 2);
  if (retired_.capacity() > 4 * prune_at_) retired_.shrink_to_fit();
}

// Every version a block carries becomes the rank of the first held version at or after it (past
// the last: one more than their number), the held versions 1…h, the next version h + 1. A held
// snapshot sees a block after this exactly when it saw it before: born <= v and v < died compare
// a block's versions with held versions only, and the ranks keep those orders.
void BlockTable::renumber() noexcept {
  const auto rank = [this](std::uint32_t version) {
    return static_cast<std::uint32_t>(
        std::lower_bound(held_.begin(), held_.end(), version, before<Held>) - held_.begin() + 1);
  };
  for (Slot& slot : slots_) {
    if (slot.key != 0) slot.born = rank(slot.born);
  }
  for (Retired& each : retired_) {
    each.block.born = rank(each.block.born);
    each.died = rank(each.died);
  }
  for (std::size_t i = 0; i < held_.size(); ++i)
    held_[i].version = static_cast<std::uint32_t>(i + 1);
  version_ = static_cast<std::uint32_t>(held_.size() + 1);
}

void BlockTable::insert(std::uint64_t key, const BlockInfo& info) {
  if (key == 0) return;
  const std::size_t found = position(key);
  if (found != slots_.size()) {
    Slot& slot = slots_[found];
    const Slot replacing = pack(key, info, version_);
    if (slot.bytes_kind == replacing.bytes_kind && slot.stack == replacing.stack &&
        slot.time_ns == replacing.time_ns) {
      return;
    }
    retire(slot);  // the block it replaces, for the snapshots that see it
    bytes_ = bytes_ - (slot.bytes_kind & kBytesMask) + (replacing.bytes_kind & kBytesMask);
    slot = replacing;
    return;
  }
  if ((size_ + 1) * 4 > slots_.size() * 3) {
    resize(slots_.empty() ? kMinSlots : slots_.size() * 2);  // past 3/4 full
  }
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(key);
  while (slots_[i].key != 0) i = (i + 1) & mask;
  slots_[i] = pack(key, info, version_);
  ++size_;
  bytes_ += slots_[i].bytes_kind & kBytesMask;
}

void BlockTable::insert_if_absent(std::uint64_t key, const BlockInfo& info) {
  if (position(key) == slots_.size()) insert(key, info);
}

bool BlockTable::erase(std::uint64_t key) {
  const std::size_t found = position(key);
  if (found == slots_.size()) return false;
  retire(slots_[found]);
  bytes_ -= slots_[found].bytes_kind & kBytesMask;
  remove_at(found);
  return true;
}

std::optional<BlockInfo> BlockTable::find(std::uint64_t key) const noexcept {
  const std::size_t at = position(key);
  if (at == slots_.size()) return std::nullopt;
  return unpack(slots_[at]);
}

void BlockTable::clear() noexcept {
  if (!held_.empty()) {
    try {
      for (const Slot& slot : slots_) {
        if (slot.key != 0 && seen(slot.born, version_)) retired_.push_back({slot, version_});
      }
    } catch (...) {
      retired_.clear();  // no room to keep them: the snapshots lose their blocks instead
    }
    if (version_ < last_version_) {
      ++version_;
    } else {
      renumber();
    }
  }
  std::vector<Slot>().swap(slots_);
  size_ = 0;
  bytes_ = 0;
}

Snapshot BlockTable::share() noexcept {
  try {
    held_.push_back({next_handle_, version_, 1});
  } catch (...) {
    return kNoSnapshot;
  }
  if (version_ < last_version_) {
    ++version_;
  } else {
    renumber();  // the new one included: it is held
  }
  return next_handle_++;
}

Snapshot BlockTable::retain(Snapshot snapshot) noexcept {
  if (const std::size_t at = held(snapshot); at != held_.size()) ++held_[at].holds;
  return snapshot;
}

void BlockTable::release(Snapshot snapshot) noexcept {
  const std::size_t at = held(snapshot);
  if (at == held_.size() || --held_[at].holds != 0) return;
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(at));
  if (held_.empty()) {
    std::vector<Retired>().swap(retired_);  // no snapshot left to see them
    std::vector<Held>().swap(held_);
    prune_at_ = 64;
  }
}

void BlockTable::collect(Snapshot snapshot, std::vector<Entry>& out) const {
  const std::size_t at = held(snapshot);
  if (at == held_.size()) return;
  const std::uint32_t version = held_[at].version;
  for (const Slot& slot : slots_) {
    if (slot.key != 0 && slot.born <= version) out.push_back({slot.key, unpack(slot)});
  }
  for (const Retired& each : retired_) {
    const Slot& slot = each.block;
    if (slot.born <= version && version < each.died) out.push_back({slot.key, unpack(slot)});
  }
}

void BlockTable::collect_live(std::vector<Entry>& out) const {
  for (const Slot& slot : slots_) {
    if (slot.key != 0) out.push_back({slot.key, unpack(slot)});
  }
}

std::size_t BlockTable::count(Snapshot snapshot) const noexcept {
  const std::size_t at = held(snapshot);
  if (at == held_.size()) return 0;
  const std::uint32_t version = held_[at].version;
  std::size_t total = 0;
  for (const Slot& slot : slots_) total += slot.key != 0 && slot.born <= version ? 1 : 0;
  for (const Retired& each : retired_) {
    total += each.block.born <= version && version < each.died ? 1 : 0;
  }
  return total;
}

std::size_t BlockTable::memory_bytes() const noexcept {
  return slots_.capacity() * sizeof(Slot) + retired_.capacity() * sizeof(Retired) +
         held_.capacity() * sizeof(Held);
}

}  // namespace gpumem::attribution
