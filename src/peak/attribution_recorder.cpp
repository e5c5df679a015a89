#include "peak/attribution_recorder.hpp"

#include <algorithm>
#include <mutex>

#include "gpumem/internal/clock.hpp"
#include "peak/channels.hpp"

using gpumem::attribution::BlockInfo;

namespace gpumem::peak::attribution {
namespace {

struct Recorder {
  std::mutex reader;  // taken before `mutex`: one walk of the table at a time
  std::mutex mutex;
  BlockTable table;
  std::int64_t epoch_peak = 0;
  std::int64_t epoch_time_ns = 0;
  Snapshot epoch_root = kNoSnapshot;
  std::vector<Slot*> slots;
};

Recorder& recorder(int device) noexcept {
  static Recorder* const table = new Recorder[kMaxDevices];  // never destroyed
  return table[std::clamp(device, 0, kMaxDevices - 1)];
}

void take(BlockTable& table, Snapshot& into, Snapshot snapshot) noexcept {
  table.release(into);
  into = table.retain(snapshot);
}

// Requires r.mutex: folds the ending epoch's peak into every attributing counter of the device
// and opens a new epoch at the current level.
void checkpoint(Recorder& r, std::int64_t level) {
  for (Slot* slot : r.slots) {
    if (r.epoch_peak > slot->peak_level) {
      slot->peak_level = r.epoch_peak;
      slot->peak_time_ns = r.epoch_time_ns;
      take(r.table, slot->peak_root, r.epoch_root);
    }
  }
  r.table.release(r.epoch_root);
  r.epoch_root = r.table.share();
  r.epoch_peak = level;
  r.epoch_time_ns = now_ns();
}

void start(Recorder& r, Slot& slot, std::int64_t level) {
  slot.peak_level = level;
  slot.peak_time_ns = now_ns();
  r.table.release(slot.peak_root);
  slot.peak_root = r.table.share();
}

}  // namespace

std::int64_t now_ns() noexcept {
  return support::monotonic_ns();
}

bool attach(Channel& channel, CounterSlot& counter, Slot& slot) {
  const bool first = g_attributing.fetch_add(1, std::memory_order_relaxed) == 0;
  if (first) {
    // Left over from an earlier attribution period: events may have changed a table after the
    // last counter cleared it.
    for (int device = 0; device < kMaxDevices; ++device) {
      Recorder& r = recorder(device);
      const std::lock_guard lock(r.mutex);
      if (r.slots.empty()) r.table.clear();
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
    r.table.release(slot.peak_root);
    slot.peak_root = kNoSnapshot;
    if (r.slots.empty()) {
      r.table.release(r.epoch_root);
      r.epoch_root = kNoSnapshot;
    }
  }
  if (g_attributing.fetch_sub(1, std::memory_order_relaxed) != 1) return;
  for (int device = 0; device < kMaxDevices; ++device) {
    Recorder& each = recorder(device);
    const std::lock_guard lock(each.mutex);
    if (each.slots.empty()) each.table.clear();
  }
}

RawSnapshot peak_of(Slot& slot) {
  Recorder& r = recorder(slot.device);
  const std::lock_guard reading(r.reader);  // one walk of the table at a time
  RawSnapshot snapshot;
  // The list is sized, and its pages touched, outside the mutex (at 1M blocks most of the time a
  // first write into fresh pages takes).
  std::size_t expected = 0;
  {
    const std::lock_guard lock(r.mutex);
    expected = r.table.size() + r.table.retired() + r.table.beside();
  }
  snapshot.blocks.resize(expected + expected / 16 + 16);
  snapshot.blocks.clear();
  {
    const std::lock_guard lock(r.mutex);
    snapshot.level = slot.peak_level;
    snapshot.time_ns = slot.peak_time_ns;
    Snapshot peak = slot.peak_root;
    if (r.epoch_peak > slot.peak_level) {
      snapshot.level = r.epoch_peak;
      snapshot.time_ns = r.epoch_time_ns;
      peak = r.epoch_root;
    }
    if (!r.table.begin_walk(peak)) return snapshot;
  }
  // The walk in steps of kWalkStep slots, the mutex let go between them so that the device's
  // events go on during it; the walk keeps what they move (BlockTable::begin_walk).
  struct Ending {
    Recorder& r;
    ~Ending() {
      const std::lock_guard lock(r.mutex);
      r.table.end_walk();
    }
  } ending{r};
  bool doubled = false;
  for (bool done = false; !done;) {
    const std::lock_guard lock(r.mutex);
    done = r.table.walk_step(snapshot.blocks, kWalkStep);
    if (done && r.table.walk_lost()) {
      snapshot.blocks.clear();  // a shifted block could not be kept: read it whole instead
      r.table.collect(r.table.walked(), snapshot.blocks);
    } else if (done) {
      doubled = r.table.walk_doubled();
    }
  }
  if (!doubled) return snapshot;
  // A block freed during the walk may have been read twice; at one snapshot a key is one block.
  std::sort(snapshot.blocks.begin(), snapshot.blocks.end(),
            [](const BlockTable::Entry& a, const BlockTable::Entry& b) { return a.key < b.key; });
  snapshot.blocks.erase(std::unique(snapshot.blocks.begin(), snapshot.blocks.end(),
                                    [](const BlockTable::Entry& a, const BlockTable::Entry& b) {
                                      return a.key == b.key;
                                    }),
                        snapshot.blocks.end());
  return snapshot;
}

void seed(int device, std::uint64_t key, std::uint64_t bytes) {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  r.table.insert_if_absent(key, {bytes, now_ns(), 0, 0});
}

void record(Channel& channel, int device, std::int64_t delta, const BlockEvent* event) noexcept {
  record(channel, device, delta, event, {delta, gpumem::detail::kBracketAtLevel});
}

void record(Channel& channel, int device, std::int64_t delta, const BlockEvent* event,
            Channel::Bracket bracket) noexcept {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  if (event != nullptr) {
    try {
      if (event->resize) {
        const std::optional<BlockInfo> known = r.table.find(event->key);
        BlockInfo info{event->bytes, known ? known->time_ns : now_ns(),
                       known && known->stack != 0 ? known->stack : event->stack, event->kind};
        if (event->bytes == 0) {
          r.table.erase(event->key);
        } else {
          r.table.insert(event->key, info);
        }
      } else if (event->allocation) {
        r.table.insert(event->key, {event->bytes, now_ns(), event->stack, event->kind});
      } else {
        r.table.erase(event->key);
      }
    } catch (...) {
      // Out of memory for the table: this block goes unnamed (level_bytes - live_bytes shows it).
    }
  }
  const Channel::Step step = channel.move(delta, bracket);
  if (delta > 0) channel.settle(step);
  const std::int64_t level = Channel::level(step);
  if (!r.slots.empty() && level > r.epoch_peak) {
    r.table.release(r.epoch_root);
    r.epoch_root = r.table.share();
    r.epoch_peak = level;
    r.epoch_time_ns = now_ns();
  }
}

void forget_kind(int device, std::uint8_t kind) noexcept {
  Recorder& r = recorder(device);
  const std::lock_guard lock(r.mutex);
  try {
    std::vector<BlockTable::Entry> entries;
    r.table.collect_live(entries);
    for (const BlockTable::Entry& entry : entries) {
      if (entry.info.kind == kind) r.table.erase(entry.key);
    }
  } catch (...) {
    r.table.clear();  // out of memory: nothing named rather than blocks that are gone
  }
}

RawSnapshot live(Channel& channel, int device) {
  Recorder& r = recorder(device);
  RawSnapshot snapshot;
  const std::lock_guard lock(r.mutex);
  snapshot.level = channel.level();
  snapshot.time_ns = now_ns();
  r.table.collect_live(snapshot.blocks);
  return snapshot;
}

}  // namespace gpumem::peak::attribution
