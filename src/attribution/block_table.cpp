#include "attribution/block_table.hpp"

#include <algorithm>
#include <limits>

#include "support/linear_probing.hpp"

namespace gpumem::attribution {
namespace {

constexpr std::size_t kMinSlots = 16;

constexpr int kKindShift = 56;
constexpr std::uint64_t kPackedMask = (std::uint64_t{1} << kKindShift) - 1;
constexpr int kTagShift = 60;
constexpr std::uint64_t kUntagged = (std::uint64_t{1} << kTagShift) - 1;
constexpr int kPackedTagShift = 52;
constexpr std::uint64_t kPackedRest = (std::uint64_t{1} << kPackedTagShift) - 1;
constexpr int kAlignmentBits = 8;  // device addresses are multiples of 256
constexpr std::uint64_t kLargestSlotBytes = std::numeric_limits<std::uint32_t>::max();
// Times after this (146 years of a monotonic clock) are never stamps, so that stamps never
// overflow.
constexpr std::int64_t kLastStamp = std::numeric_limits<std::int64_t>::max() / 2;

// The key in 56 bits, or 0 when it does not pack (key 0 included): the tag in bits 52-55, then a
// device address without its 8 low (zero) bits, or a tagged key's rest.
std::uint64_t pack_key(std::uint64_t key) noexcept {
  const std::uint64_t tag = key >> kTagShift;
  const std::uint64_t rest = key & kUntagged;
  if (tag == 0) {
    return rest % (std::uint64_t{1} << kAlignmentBits) == 0 ? rest >> kAlignmentBits : 0;
  }
  return rest <= kPackedRest ? tag << kPackedTagShift | rest : 0;
}

std::uint64_t unpack_key(std::uint64_t packed) noexcept {
  const std::uint64_t tag = packed >> kPackedTagShift;
  const std::uint64_t rest = packed & kPackedRest;
  return tag == 0 ? rest << kAlignmentBits : tag << kTagShift | rest;
}

bool before(const auto& held, std::int64_t stamp) noexcept {
  return held.stamp < stamp;
}

// Slots for `blocks` live blocks: 5/8 full.
std::size_t slots_for(std::size_t blocks) noexcept {
  return std::max(kMinSlots, blocks * 8 / 5 + 1);
}

}  // namespace

BlockInfo BlockTable::unpack(const Slot& slot) noexcept {
  return {slot.bytes, slot.time_ns, slot.stack, static_cast<std::uint8_t>(slot.key >> kKindShift)};
}

std::size_t BlockTable::home(std::uint64_t packed) const noexcept {
  // The high bits of the product, scaled to the table's size: the low bits keep the key's.
  __extension__ using Wide128 = unsigned __int128;
  const std::uint64_t hash = (packed & kPackedMask) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>((Wide128{hash} * slots_.size()) >> 64);
}

std::size_t BlockTable::position(std::uint64_t packed, std::size_t* empty) const noexcept {
  const std::size_t end = slots_.size();
  std::size_t i = end;
  if (end != 0 && packed != 0) {
    for (i = home(packed); slots_[i].key != 0; i = i + 1 == end ? 0 : i + 1) {
      if ((slots_[i].key & kPackedMask) == packed) return i;
    }
  }
  if (empty != nullptr) *empty = i;
  return end;
}

BlockTable::Found BlockTable::locate(std::uint64_t key) {
  Found found{slots_.size(), slots_.size(), beside_.end()};
  found.slot = position(pack_key(key), &found.empty);
  if (found.slot == slots_.size() && !beside_.empty()) found.wide = beside_.find(key);
  return found;
}

std::int64_t BlockTable::stamp_for(std::int64_t time_ns) const noexcept {
  return time_ns >= next_ && time_ns <= kLastStamp ? time_ns : next_;
}

void BlockTable::place(const Slot& slot) noexcept {
  const std::size_t end = slots_.size();
  std::size_t i = home(slot.key);
  while (slots_[i].key != 0) i = i + 1 == end ? 0 : i + 1;
  slots_[i] = slot;
}

void BlockTable::keep_for_walk(const Slot& slot) noexcept {
  if (slot.time_ns > walk_.stamp) return;  // after the snapshot: not its block
  try {
    walk_.moved.push_back({unpack_key(slot.key & kPackedMask), unpack(slot)});
  } catch (...) {
    walk_.lost = true;
  }
}

void BlockTable::resize(std::size_t slots) {
  std::vector<Slot> old(slots);
  if (walk_.phase == Phase::slots) {
    // Every slot moves: the walk takes the blocks it has not read yet now, and has read them all.
    try {
      for (std::size_t i = walk_.cursor; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (slot.key != 0 && slot.time_ns <= walk_.stamp) {
          walk_.moved.push_back({unpack_key(slot.key & kPackedMask), unpack(slot)});
        }
      }
    } catch (...) {
      walk_.doubled = true;  // the table stays; what was handed over is read again in its slot
      throw;
    }
    walk_.cursor = slots;
  }
  old.swap(slots_);
  for (const Slot& slot : old) {
    if (slot.key != 0) place(slot);
  }
}

void BlockTable::remove_at(std::size_t hole) noexcept {
  const auto home_of = [this](std::uint64_t packed) { return home(packed); };
  const auto after = [size = slots_.size()](std::size_t i) { return i + 1 == size ? 0 : i + 1; };
  if (walk_.phase == Phase::slots) {
    const std::size_t cursor = walk_.cursor;
    const auto moved = [this, cursor](std::size_t from, std::size_t to) {
      if (from >= cursor && to < cursor) keep_for_walk(slots_[from]);
      if (from < cursor && to >= cursor) walk_.doubled = true;  // wraps, to be read again
    };
    support::erase_by_backward_shift(slots_.data(), hole, after, home_of, moved);
    --in_slots_;
    return;  // no shrinking under a walk
  }
  support::erase_by_backward_shift(slots_.data(), hole, after, home_of,
                                   [](std::size_t, std::size_t) {});
  --in_slots_;
  // Down to kMinSlots, never to none: a block allocated and freed again and again must not cost
  // an allocation each time.
  if (slots_.size() > kMinSlots && in_slots_ * 16 < slots_.size() * 7) {
    try {
      resize(slots_for(in_slots_));  // below 7/16 full: to 5/8
    } catch (...) {
      // No memory for the smaller table: the larger one stays, as correct.
    }
  }
}

bool BlockTable::seen(std::int64_t born, std::int64_t died) const noexcept {
  const auto first = std::lower_bound(held_.begin(), held_.end(), born, before<Held>);
  return first != held_.end() && first->stamp < died;
}

std::size_t BlockTable::held(Snapshot snapshot) const noexcept {
  const auto it =
      std::lower_bound(held_.begin(), held_.end(), snapshot,
                       [](const Held& each, Snapshot handle) { return each.handle < handle; });
  return it != held_.end() && it->handle == snapshot ? static_cast<std::size_t>(it - held_.begin())
                                                     : held_.size();
}

void BlockTable::make_room_to_retire() {
  if (retired_.size() == retired_.capacity()) {
    retired_.reserve(std::max<std::size_t>(64, retired_.capacity() * 2));
  }
}

// A change at next_ removes the block: kept for the held snapshots that see it (every held stamp
// is before next_). Requires room made by make_room_to_retire.
void BlockTable::retire(std::uint64_t key, const BlockInfo& info, std::int64_t born) noexcept {
  if (!seen(born, next_)) return;
  retired_.push_back({key, info, born, next_});
  // A block the walk sees, which it may have read in its slot already and will read here.
  if (walk_.phase != Phase::none && born <= walk_.stamp) walk_.doubled = true;
  if (retired_.size() >= prune_at_ && walk_.phase == Phase::none) prune();  // a walk reads it
}

void BlockTable::prune() noexcept {
  std::erase_if(retired_, [this](const Retired& each) { return !seen(each.born, each.died); });
  prune_at_ = std::max<std::size_t>(64, retired_.size() * 2);
  if (retired_.capacity() > 4 * prune_at_) retired_.shrink_to_fit();
}

void BlockTable::drop_wide(std::unordered_map<std::uint64_t, Wide>::iterator wide) noexcept {
  beside_.erase(wide);
  if (beside_.empty()) std::unordered_map<std::uint64_t, Wide>().swap(beside_);  // its buckets
}

void BlockTable::insert(std::uint64_t key, const BlockInfo& info) {
  if (key == 0) return;
  const std::uint64_t packed = pack_key(key);
  Found found = locate(key);
  const bool in_slot = found.slot != slots_.size();
  const bool in_wide = found.wide != beside_.end();
  const std::optional<BlockInfo> old = in_slot   ? std::optional(unpack(slots_[found.slot]))
                                       : in_wide ? std::optional(found.wide->second.info)
                                                 : std::nullopt;
  if (old && old->bytes == info.bytes && old->time_ns == info.time_ns && old->stack == info.stack &&
      old->kind == info.kind) {
    return;
  }
  const std::int64_t born = stamp_for(info.time_ns);
  const bool fits = packed != 0 && info.bytes <= kLargestSlotBytes && born == info.time_ns;
  const std::int64_t old_born = in_slot   ? slots_[found.slot].time_ns
                                : in_wide ? found.wide->second.born
                                          : 0;
  // Everything that allocates first, so that a failure leaves the table as it was.
  if (old && seen(old_born, next_)) make_room_to_retire();
  if (fits && !in_slot && (in_slots_ + 1) * 16 > slots_.size() * 13) {
    resize(slots_for(in_slots_ + 1));  // past 13/16 full: to 5/8
    found.empty = slots_.size();       // its probe was in the old table
  }
  if (!fits && !in_wide) found.wide = beside_.try_emplace(key).first;
  if (old) {
    retire(key, *old, old_born);
    bytes_ -= old->bytes;
    --size_;
  }
  if (fits) {
    const Slot slot{packed | std::uint64_t{info.kind} << kKindShift,
                    static_cast<std::uint32_t>(info.bytes), info.stack, info.time_ns};
    if (in_slot) {
      slots_[found.slot] = slot;
    } else {
      if (found.empty == slots_.size()) {
        place(slot);
      } else {
        slots_[found.empty] = slot;  // where the probe for the key ended
      }
      ++in_slots_;
    }
    if (in_wide) drop_wide(found.wide);
  } else {
    found.wide->second = {info, born};
    if (in_slot) remove_at(found.slot);
  }
  ++size_;
  bytes_ += info.bytes;
  stamp_ = std::max(stamp_, born);
}

void BlockTable::insert_if_absent(std::uint64_t key, const BlockInfo& info) {
  const Found found = locate(key);
  if (found.slot == slots_.size() && found.wide == beside_.end()) insert(key, info);
}

bool BlockTable::erase(std::uint64_t key) {
  const Found found = locate(key);
  if (found.slot != slots_.size()) {
    const Slot& slot = slots_[found.slot];
    if (seen(slot.time_ns, next_)) make_room_to_retire();
    retire(key, unpack(slot), slot.time_ns);
    bytes_ -= slot.bytes;
    remove_at(found.slot);
  } else if (found.wide != beside_.end()) {
    if (seen(found.wide->second.born, next_)) make_room_to_retire();
    retire(key, found.wide->second.info, found.wide->second.born);
    bytes_ -= found.wide->second.info.bytes;
    drop_wide(found.wide);
  } else {
    return false;
  }
  --size_;
  stamp_ = std::max(stamp_, next_);  // a later snapshot is past its death
  return true;
}

std::optional<BlockInfo> BlockTable::find(std::uint64_t key) const noexcept {
  const std::size_t at = position(pack_key(key));
  if (at != slots_.size()) return unpack(slots_[at]);
  const auto wide = beside_.find(key);
  if (wide == beside_.end()) return std::nullopt;
  return wide->second.info;
}

void BlockTable::clear() noexcept {
  if (!held_.empty()) {
    try {
      for (const Slot& slot : slots_) {
        if (slot.key != 0 && seen(slot.time_ns, next_)) {
          retired_.push_back(
              {unpack_key(slot.key & kPackedMask), unpack(slot), slot.time_ns, next_});
        }
      }
      for (const auto& [key, wide] : beside_) {
        if (seen(wide.born, next_)) retired_.push_back({key, wide.info, wide.born, next_});
      }
    } catch (...) {
      retired_.clear();  // no room to keep them: the snapshots lose their blocks instead
    }
    stamp_ = std::max(stamp_, next_);
  }
  std::vector<Slot>().swap(slots_);
  std::unordered_map<std::uint64_t, Wide>().swap(beside_);
  if (walk_.phase == Phase::slots) walk_.cursor = 0;
  if (walk_.phase != Phase::none) walk_.doubled = true;  // what it read in them is retired now
  size_ = 0;
  in_slots_ = 0;
  bytes_ = 0;
}

Snapshot BlockTable::share() noexcept {
  try {
    held_.push_back({next_handle_, stamp_, 1});
  } catch (...) {
    return kNoSnapshot;
  }
  next_ = stamp_ + 1;  // stamp_ stays below kLastStamp + the number of snapshots taken
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
  const std::int64_t stamp = held_[at].stamp;
  for (const Slot& slot : slots_) {
    if (slot.key != 0 && slot.time_ns <= stamp) {
      out.push_back({unpack_key(slot.key & kPackedMask), unpack(slot)});
    }
  }
  for (const auto& [key, wide] : beside_) {
    if (wide.born <= stamp) out.push_back({key, wide.info});
  }
  for (const Retired& each : retired_) {
    if (each.born <= stamp && stamp < each.died) out.push_back({each.key, each.info});
  }
}

void BlockTable::collect_live(std::vector<Entry>& out) const {
  for (const Slot& slot : slots_) {
    if (slot.key != 0) out.push_back({unpack_key(slot.key & kPackedMask), unpack(slot)});
  }
  for (const auto& [key, wide] : beside_) out.push_back({key, wide.info});
}

bool BlockTable::begin_walk(Snapshot snapshot) {
  const std::size_t at = held(snapshot);
  if (at == held_.size()) return false;
  walk_ = Walk{Phase::slots, retain(snapshot), held_[at].stamp, 0, {}, false, false};
  return true;
}

bool BlockTable::walk_step(std::vector<Entry>& out, std::size_t slots) {
  out.insert(out.end(), walk_.moved.begin(), walk_.moved.end());
  walk_.moved.clear();
  const std::int64_t stamp = walk_.stamp;
  if (walk_.phase == Phase::slots) {
    const std::size_t end = std::min(slots_.size(), walk_.cursor + slots);
    for (std::size_t i = walk_.cursor; i < end; ++i) {
      const Slot& slot = slots_[i];
      if (slot.key != 0 && slot.time_ns <= stamp) {
        out.push_back({unpack_key(slot.key & kPackedMask), unpack(slot)});
      }
    }
    walk_.cursor = std::max(walk_.cursor, end);
    if (walk_.cursor < slots_.size()) return false;
    walk_.phase = Phase::retired;
    walk_.cursor = 0;
    return false;
  }
  if (walk_.phase != Phase::retired) return true;
  const std::size_t end = std::min(retired_.size(), walk_.cursor + slots);
  for (std::size_t i = walk_.cursor; i < end; ++i) {
    const Retired& each = retired_[i];
    if (each.born <= stamp && stamp < each.died) out.push_back({each.key, each.info});
  }
  walk_.cursor = end;
  if (end < retired_.size()) return false;
  // Last, the blocks beside the table (few by design), all in this step.
  for (const auto& [key, wide] : beside_) {
    if (wide.born <= stamp) out.push_back({key, wide.info});
  }
  walk_.phase = Phase::none;
  return true;
}

void BlockTable::end_walk() noexcept {
  const Snapshot snapshot = walk_.snapshot;
  walk_ = Walk{};
  release(snapshot);
}

std::size_t BlockTable::count(Snapshot snapshot) const noexcept {
  const std::size_t at = held(snapshot);
  if (at == held_.size()) return 0;
  const std::int64_t stamp = held_[at].stamp;
  std::size_t total = 0;
  for (const Slot& slot : slots_) total += slot.key != 0 && slot.time_ns <= stamp ? 1 : 0;
  for (const auto& [key, wide] : beside_) total += wide.born <= stamp ? 1 : 0;
  for (const Retired& each : retired_) {
    total += each.born <= stamp && stamp < each.died ? 1 : 0;
  }
  return total;
}

std::size_t BlockTable::memory_bytes() const noexcept {
  using Node = std::unordered_map<std::uint64_t, Wide>::value_type;
  return slots_.capacity() * sizeof(Slot) + beside_.size() * (sizeof(Node) + 3 * sizeof(void*)) +
         (beside_.empty() ? 0 : beside_.bucket_count() * sizeof(void*)) +
         retired_.capacity() * sizeof(Retired) + held_.capacity() * sizeof(Held);
}

}  // namespace gpumem::attribution
