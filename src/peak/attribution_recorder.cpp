#include "peak/attribution_recorder.hpp"

#include <algorithm>
#include <mutex>

#include "gpumem/internal/clock.hpp"
#include "peak/channels.hpp"

using gpumem::attribution::BlockInfo;

namespace gpumem::peak::attribution {
namespace {

struct Recorder {
  std::mutex mutex;
  BlockTree tree;
  std::int64_t epoch_peak = 0;
  std::int64_t epoch_time_ns = 0;
  Root epoch_root = nullptr;
  std::vector<Slot*> slots;
};

Recorder& recorder(int device) noexcept {
  static Recorder* const table = new Recorder[kMaxDevices];  // never destroyed
  return table[std::clamp(device, 0, kMaxDevices - 1)];
}

void take(Root& into, Root root) noexcept {
  BlockTree::release(into);
  into = BlockTree::retain(root);
}

// Requires r.mutex: folds the ending epoch's peak into every attributing counter of the device
// and opens a new epoch at the current level.
void checkpoint(Recorder& r, std::int64_t level) {
  for (Slot* slot : r.slots) {
    if (r.epoch_peak > slot->peak_level) {
      slot->peak_level = r.epoch_peak;
      slot->peak_time_ns = r.epoch_time_ns;
      take(slot->peak_root, r.epoch_root);
    }
  }
  BlockTree::release(r.epoch_root);
  r.epoch_root = r.tree.share();
  r.epoch_peak = level;
  r.epoch_time_ns = now_ns();
}

void start(Recorder& r, Slot& slot, std::int64_t level) {
  slot.peak_level = level;
  slot.peak_time_ns = now_ns();
  BlockTree::release(slot.peak_root);
  slot.peak_root = r.tree.share();
}

}  // namespace

std::int64_t now_ns() noexcept {
  return support::monotonic_ns();
}

bool attach(Channel& channel, CounterSlot& counter, Slot& slot) {
  const bool first = g_attributing.fetch_add(1, std::memory_order_relaxed) == 0;
  if (first) {
    // Left over from an earlier attribution period: events may have changed a tree after the
    // last counter cleared it.
    for (int device = 0; device < kMaxDevices; ++device) {
      Recorder& r = recorder(device);
      const std::lock_guard lock(r.mutex);
      if (r.slots.empty()) r.tree.clear();
    }
  }
  Recorder& r = recorder(slot.device);
  const std::lock_guard lock(r.mutex);
  channel.attach(counter);
  checkpoint(r, counter.start_level);
  start(r, slot, counter.start_level);
  r.slots.push_back(&slot);
  return first;
}

void restart(Channel& channel, CounterSlot& counter, Slot& slot) {
  Recorder& r = recorder(slot.device);
  const std::lock_guard lock(r.mutex);
  channel.restart(counter);
  checkpoint(r, counter.start_level);
  start(r, slot, counter.start_level);
}

void detach(Channel& channel, CounterSlot& counter, Slot& slot) {
  Recorder& r = recorder(slot.device);
  {
    const std::lock_guard lock(r.mutex);
    channel.detach(counter);
    r.slots.erase(std::remove(r.slots.begin(), r.slots.end(), &slot), r.slots.end());
    BlockTree::release(slot.peak_root);
    slot.peak_root = nullptr;
    if (r.slots.empty()) {
      BlockTree::release(r.epoch_root);
      r.epoch_root = nullptr;
    }
  }
  if (g_attributing.fetch_sub(1, std::memory_order_relaxed) != 1) return;
  for (int device = 0; device < kMaxDevices; ++device) {
    Recorder& each = recorder(device);
    const std::lock_guard lock(each.mutex);
    if (each.slots.empty()) each.tree.clear();
  }
}

RawSnapshot peak_of(Slot& slot) {
  Recorder& r = recorder(slot.device);
  RawSnapshot snapshot;
  Root root = nullptr;
  {
    const std::lock_guard lock(r.mutex);
    snapshot.level = slot.peak_level;
    snapshot.time_ns = slot.peak_time_ns;
    root = BlockTree::retain(slot.peak_root);
    if (r.epoch_peak > slot.peak_level) {
      snapshot.level = r.epoch_peak;
      snapshot.time_ns = r.epoch_time_ns;
      take(root, r.epoch_root);
    }
  }
  // The nodes a root reaches never change while it is held; releasing takes the mutex again.
  try {
    BlockTree::collect(root, snapshot.blocks);
  } catch (...) {
    const std::lock_guard lock(r.mutex);
    BlockTree::release(root);
    throw;
  }
  const std::lock_guard lock(r.mutex);
  BlockTree::release(root);
  return snapshot;
}

void seed(int device, std::uint64_t key, std::uint64_t bytes) {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  r.tree.insert_if_absent(key, {bytes, now_ns(), 0, 0});
}

void record(Channel& channel, int device, std::int64_t delta, const BlockEvent* event) noexcept {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  if (event != nullptr) {
    try {
      if (event->resize) {
        const BlockInfo* known = r.tree.find(event->key);
        BlockInfo info{event->bytes, known ? known->time_ns : now_ns(),
                       known && known->stack != 0 ? known->stack : event->stack, event->kind};
        if (event->bytes == 0) {
          r.tree.erase(event->key);
        } else {
          r.tree.insert(event->key, info);
        }
      } else if (event->allocation) {
        r.tree.insert(event->key, {event->bytes, now_ns(), event->stack, event->kind});
      } else {
        r.tree.erase(event->key);
      }
    } catch (...) {
      // Out of memory for the tree: this block goes unnamed (level_bytes - live_bytes shows it).
    }
  }
  const Channel::Step step = channel.move(delta);
  if (delta > 0) channel.settle(step);
  const std::int64_t level = Channel::level(step);
  if (!r.slots.empty() && level > r.epoch_peak) {
    BlockTree::release(r.epoch_root);
    r.epoch_root = r.tree.share();
    r.epoch_peak = level;
    r.epoch_time_ns = now_ns();
  }
}

void forget_kind(int device, std::uint8_t kind) noexcept {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  try {
    std::vector<BlockTree::Entry> entries;
    const Root root = r.tree.share();
    BlockTree::collect(root, entries);
    BlockTree::release(root);
    for (const BlockTree::Entry& entry : entries) {
      if (entry.info.kind == kind) r.tree.erase(entry.key);
    }
  } catch (...) {
    r.tree.clear();  // out of memory: nothing named rather than blocks that are gone
  }
}

RawSnapshot live(Channel& channel, int device) {
  Recorder& r = recorder(device);
  RawSnapshot snapshot;
  const std::lock_guard lock(r.mutex);
  snapshot.level = channel.level();
  snapshot.time_ns = now_ns();
  const Root root = r.tree.share();
  try {
    BlockTree::collect(root, snapshot.blocks);
  } catch (...) {
    BlockTree::release(root);
    throw;
  }
  BlockTree::release(root);
  return snapshot;
}

}  // namespace gpumem::peak::attribution
