#include "attribution/block_table.hpp"

#include <algorithm>
#include <bit>

#include "support/linear_probing.hpp"

namespace gpumem::attribution {
namespace {

constexpr std::size_t kMinSlots = 16;

}  // namespace

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

bool BlockTable::seen(std::uint64_t born, std::uint64_t died) const noexcept {
  const auto first = std::lower_bound(
      held_.begin(), held_.end(), born,
      [](const Held& held, std::uint64_t version) { return held.version < version; });
  return first != held_.end() && first->version < died;
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

void BlockTable::insert(std::uint64_t key, const BlockInfo& info) {
  if (key == 0) return;
  const std::size_t found = position(key);
  if (found != slots_.size()) {
    Slot& slot = slots_[found];
    if (slot.info.bytes == info.bytes && slot.info.stack == info.stack &&
        slot.info.kind == info.kind && slot.info.time_ns == info.time_ns) {
      return;
    }
    retire(slot);  // the block it replaces, for the snapshots that see it
    bytes_ = bytes_ - slot.info.bytes + info.bytes;
    slot = {key, info, version_};
    return;
  }
  if ((size_ + 1) * 4 > slots_.size() * 3) {
    resize(slots_.empty() ? kMinSlots : slots_.size() * 2);  // past 3/4 full
  }
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(key);
  while (slots_[i].key != 0) i = (i + 1) & mask;
  slots_[i] = {key, info, version_};
  ++size_;
  bytes_ += info.bytes;
}

void BlockTable::insert_if_absent(std::uint64_t key, const BlockInfo& info) {
  if (position(key) == slots_.size()) insert(key, info);
}

bool BlockTable::erase(std::uint64_t key) {
  const std::size_t found = position(key);
  if (found == slots_.size()) return false;
  retire(slots_[found]);
  bytes_ -= slots_[found].info.bytes;
  remove_at(found);
  return true;
}

const BlockInfo* BlockTable::find(std::uint64_t key) const noexcept {
  const std::size_t at = position(key);
  return at != slots_.size() ? &slots_[at].info : nullptr;
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
    ++version_;
  }
  std::vector<Slot>().swap(slots_);
  size_ = 0;
  bytes_ = 0;
}

Snapshot BlockTable::share() noexcept {
  try {
    held_.push_back({version_, 1});
  } catch (...) {
    return kNoSnapshot;
  }
  return version_++;
}

Snapshot BlockTable::retain(Snapshot snapshot) noexcept {
  if (snapshot == kNoSnapshot) return snapshot;
  const auto it = std::lower_bound(
      held_.begin(), held_.end(), snapshot,
      [](const Held& held, std::uint64_t version) { return held.version < version; });
  if (it != held_.end() && it->version == snapshot) ++it->holds;
  return snapshot;
}

void BlockTable::release(Snapshot snapshot) noexcept {
  if (snapshot == kNoSnapshot) return;
  const auto it = std::lower_bound(
      held_.begin(), held_.end(), snapshot,
      [](const Held& held, std::uint64_t version) { return held.version < version; });
  if (it == held_.end() || it->version != snapshot) return;
  if (--it->holds != 0) return;
  held_.erase(it);
  if (held_.empty()) {
    std::vector<Retired>().swap(retired_);  // no snapshot left to see them
    std::vector<Held>().swap(held_);
    prune_at_ = 64;
  }
}

void BlockTable::collect(Snapshot snapshot, std::vector<Entry>& out) const {
  if (snapshot == kNoSnapshot) return;
  for (const Slot& slot : slots_) {
    if (slot.key != 0 && slot.born <= snapshot) {
      out.push_back({slot.key, slot.info});
    }
  }
  for (const Retired& each : retired_) {
    const Slot& slot = each.block;
    if (slot.born <= snapshot && snapshot < each.died) {
      out.push_back({slot.key, slot.info});
    }
  }
}

void BlockTable::collect_live(std::vector<Entry>& out) const {
  for (const Slot& slot : slots_) {
    if (slot.key != 0) out.push_back({slot.key, slot.info});
  }
}

std::size_t BlockTable::count(Snapshot snapshot) const noexcept {
  if (snapshot == kNoSnapshot) return 0;
  std::size_t total = 0;
  for (const Slot& slot : slots_) total += slot.key != 0 && slot.born <= snapshot ? 1 : 0;
  for (const Retired& each : retired_) {
    total += each.block.born <= snapshot && snapshot < each.died ? 1 : 0;
  }
  return total;
}

std::size_t BlockTable::memory_bytes() const noexcept {
  return slots_.capacity() * sizeof(Slot) + retired_.capacity() * sizeof(Retired) +
         held_.capacity() * sizeof(Held);
}

}  // namespace gpumem::attribution
