#include "peak/footprint.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "attribution/stacks.hpp"
#include "driver/cuda.hpp"
#include "gpumem/attribution.hpp"
#include "gpumem/device.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/peak.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/in_flight.hpp"

namespace gpumem::peak::footprint {
namespace {

using namespace gpumem::abi;

struct Pool {
  CUmemoryPool pool = nullptr;
  int device = 0;
  std::int64_t counted = 0;  // the reservation this pool has put into the device's level
  bool seen = false;         // its reservation was read at least once (first_sight() then)
};

struct DeviceState {
  std::int64_t graphs = 0;   // the graph reservation counted into the level
  std::int64_t other = 0;    // context, modules, rounding: the level NVML shows beyond the events
  bool graphs_seen = false;  // read at least once
  bool reconciled = false;   // the last reconciliation found this process in NVML's list
  // A reservation was first seen since the last reconciliation (first_sight()): the next
  // public call settles `other` by a reading.
  bool unsettled = false;
  CUmemoryPool current_pool = nullptr;
};

// Pools and graph reservations change only in driver calls that are rare next to allocations
// (pool allocations, synchronisations, graph launches), so one mutex guards them all.
struct State {
  std::mutex mutex;
  std::vector<Pool> pools;
  DeviceState devices[kMaxDevices];
  // Whether any pool or graph reservation was seen: a synchronisation (frequent) then has
  // something to re-read; until then it costs one load.
  std::atomic<bool> any_reservation{false};
  // Whether a device may be unsettled (first_sight()): the calls that re-read reservations, one
  // per stream-ordered allocation, then look no further than this load.
  std::atomic<bool> any_unsettled{false};
};

State& state() noexcept {
  static State* const instance = new State;  // never destroyed: callbacks may come during exit
  return *instance;
}

bool valid(int device) noexcept {
  return device >= 0 && device < kMaxDevices;
}

// The ledger's rule: a pool's or the graphs' part moves only by its own driver-reported change,
// and never against another part. In attribution mode a reservation is a block too (`key`, now
// `total` bytes), with the stack of the call that first made it grow.
// `first`: the part's first reading, which names its block even where the level does not move.
void move_part(int device, std::int64_t delta, std::uint64_t key, std::int64_t total,
               BlockKind kind, bool first = false) noexcept {
  if (!valid(device) || (delta == 0 && !first)) return;
  if (!attribution::active()) return account_exact(device, delta);
  attribution::BlockEvent event;
  event.key = key;
  event.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, total));
  event.kind = static_cast<std::uint8_t>(kind);
  event.resize = true;
  if (delta > 0 || (first && total > 0)) event.stack = gpumem::attribution::capture_stack();
  account_exact(device, delta, &event);
}

// The first reading of a reservation (`reserved` bytes) that may have existed before gpumem saw
// it: what of it NVML had shown at the last reconciliation is in `other` already, what grew since
// is not, and only a reading can tell the two apart. Until that reading (settle(), right after
// the caller lets go of the mutex) the part is taken from `other` as far as it goes, so the level
// is never above the device's figure; the reading then sets `other` to what NVML shows beyond the
// parts. Requires state().mutex.
void first_sight(DeviceState& device_state, int device, std::int64_t reserved, std::uint64_t key,
                 BlockKind kind) noexcept {
  if (!valid(device)) return;
  const std::int64_t from_other = std::min(std::max<std::int64_t>(0, reserved), device_state.other);
  device_state.other -= from_other;
  if (reserved > 0 && device_state.reconciled) {
    device_state.unsettled = true;
    state().any_unsettled.store(true, std::memory_order_relaxed);
  }
  move_part(device, reserved - from_other, key, reserved, kind, /*first=*/true);
}

std::uint64_t pool_key(CUmemoryPool pool) noexcept {
  return attribution::kPoolKeyTag |
         (reinterpret_cast<std::uintptr_t>(pool) & ~attribution::kKeyTagMask);
}
std::uint64_t graph_key(int device) noexcept {
  return attribution::kGraphKeyTag | static_cast<std::uint64_t>(device);
}

std::optional<std::int64_t> pool_reservation(CUmemoryPool pool) noexcept {
  const driver::Cuda& cuda = driver::cuda();
  std::uint64_t value = 0;
  if (cuda.memPoolGetAttribute == nullptr ||
      cuda.memPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value) !=
          CUDA_SUCCESS) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(value);
}

// Requires state().mutex.
void refresh(State& s, Pool& pool) noexcept {
  const std::optional<std::int64_t> reserved = pool_reservation(pool.pool);
  if (!reserved) return;
  if (pool.seen) {
    move_part(pool.device, *reserved - pool.counted, pool_key(pool.pool), *reserved,
              BlockKind::pool);
  } else {
    first_sight(s.devices[pool.device], pool.device, *reserved, pool_key(pool.pool),
                BlockKind::pool);
    pool.seen = true;
  }
  pool.counted = *reserved;
}

CUmemoryPool current_pool(DeviceState& device_state, int device) noexcept {
  if (device_state.current_pool != nullptr) return device_state.current_pool;
  const driver::Cuda& cuda = driver::cuda();
  CUdevice handle = 0;
  if (cuda.deviceGetMemPool == nullptr || cuda.deviceGet(&handle, device) != CUDA_SUCCESS ||
      cuda.deviceGetMemPool(&device_state.current_pool, handle) != CUDA_SUCCESS) {
    device_state.current_pool = nullptr;
  }
  return device_state.current_pool;
}

// The pool's entry, added (counting nothing yet) if it is new; nullptr for no pool. Requires
// state().mutex.
Pool* known_pool(State& s, CUmemoryPool pool, int device) {
  if (pool == nullptr) return nullptr;
  const auto found = std::find_if(s.pools.begin(), s.pools.end(),
                                  [&](const Pool& known) { return known.pool == pool; });
  if (found != s.pools.end()) return &*found;
  s.pools.push_back(Pool{pool, device, 0, false});
  s.any_reservation.store(true, std::memory_order_relaxed);
  return &s.pools.back();
}

void refresh_graphs_locked(State& s, int device) noexcept {
  const driver::Cuda& cuda = driver::cuda();
  CUdevice handle = 0;
  std::uint64_t reserved = 0;
  if (cuda.deviceGetGraphMemAttribute == nullptr ||
      cuda.deviceGet(&handle, device) != CUDA_SUCCESS ||
      cuda.deviceGetGraphMemAttribute(handle, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
          CUDA_SUCCESS) {
    return;
  }
  DeviceState& device_state = s.devices[device];
  if (device_state.graphs_seen) {
    move_part(device, static_cast<std::int64_t>(reserved) - device_state.graphs, graph_key(device),
              static_cast<std::int64_t>(reserved), BlockKind::graph);
  } else {
    first_sight(device_state, device, static_cast<std::int64_t>(reserved), graph_key(device),
                BlockKind::graph);
  }
  device_state.graphs = static_cast<std::int64_t>(reserved);
  device_state.graphs_seen = true;
  s.any_reservation.store(true, std::memory_order_relaxed);
}

// This process's memory on a device as NVML lists it. Once listed, a process that is no longer
// listed holds nothing there; never listed, NVML cannot tell (it may list host PIDs that differ
// from ours, in a container).
std::optional<std::uint64_t> own_usage(int device, bool listed_before) noexcept {
  static const unsigned self = static_cast<unsigned>(::getpid());
  const std::vector<ProcessMemory> processes = device_processes(device);
  for (const ProcessMemory& process : processes) {
    if (process.pid == self) return process.used_bytes;
  }
  if (listed_before && gpu_mem_get_bytes(device).has_value()) return 0;
  return std::nullopt;
}

std::atomic<bool> g_reconciliation{true};

// Reconciles the devices where a reservation was first seen (first_sight()). Called without the
// mutex, after the call that saw it. Where a reading is refused (another thread in a traced call)
// the device stays unsettled, and the next call or reading tries again.
void settle() noexcept {
  State& s = state();
  if (!s.any_unsettled.load(std::memory_order_relaxed)) return;
  bool any = false;
  bool unsettled[kMaxDevices] = {};
  {
    const std::lock_guard lock(s.mutex);
    for (int device = 0; device < kMaxDevices; ++device) {
      unsettled[device] = s.devices[device].unsettled;
      any = any || unsettled[device];
    }
    if (!any) s.any_unsettled.store(false, std::memory_order_relaxed);
  }
  if (!any) return;
  for (int device = 0; device < kMaxDevices; ++device) {
    if (unsettled[device]) reconcile(device);
  }
}

}  // namespace

void pool_used(CUmemoryPool pool, int device) noexcept {
  if (!valid(device)) return;
  State& s = state();
  try {
    const std::lock_guard lock(s.mutex);
    if (Pool* used = known_pool(s, pool != nullptr ? pool : current_pool(s.devices[device], device),
                                device)) {
      refresh(s, *used);
    }
  } catch (...) {
    // Out of memory for the pool list: this pool's reservation goes unseen by events.
  }
  settle();
}

void pool_destroyed(CUmemoryPool pool) noexcept {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto found = std::find_if(s.pools.begin(), s.pools.end(),
                                  [&](const Pool& known) { return known.pool == pool; });
  if (found == s.pools.end()) return;
  attribution::BlockEvent gone;
  gone.key = pool_key(pool);
  account_exact(found->device, -found->counted, attribution::active() ? &gone : nullptr);
  for (DeviceState& device_state : s.devices) {
    if (device_state.current_pool == pool) device_state.current_pool = nullptr;
  }
  s.pools.erase(found);
}

void current_pool_changed(int device) noexcept {
  if (!valid(device)) return;
  State& s = state();
  const std::lock_guard lock(s.mutex);
  s.devices[device].current_pool = nullptr;
}

void refresh_pools(int device) noexcept {
  State& s = state();
  {
    const std::lock_guard lock(s.mutex);
    for (Pool& pool : s.pools) {
      if (device < 0 || pool.device == device) refresh(s, pool);
    }
  }
  settle();
}

void refresh_graphs(int device) noexcept {
  State& s = state();
  {
    const std::lock_guard lock(s.mutex);
    if (valid(device)) {
      refresh_graphs_locked(s, device);
    } else {
      for (int each = 0; each < kMaxDevices; ++each) {
        if (s.devices[each].graphs_seen) refresh_graphs_locked(s, each);
      }
    }
  }
  settle();
}

void synchronized() noexcept {
  if (!state().any_reservation.load(std::memory_order_relaxed)) return;
  refresh_pools(-1);
  refresh_graphs(-1);
}

bool reconciling() noexcept {
  return g_reconciliation.load(std::memory_order_relaxed);
}

bool reconcile(int device) noexcept {
  Channel* target = channel(Stream::exact, device);
  if (!valid(device) || target == nullptr || !g_reconciliation.load(std::memory_order_relaxed)) {
    return false;
  }
  State& s = state();
  bool listed_before = false;
  {
    const std::lock_guard lock(s.mutex);
    listed_before = s.devices[device].reconciled;
  }
  // NVML's figure matches the level only if no traced call of another thread was in flight at
  // any moment of the reading: the driver charges a block before the call's EXIT counts it, so
  // a block in between would be counted twice (or a freed one not at all), and the difference
  // would stay in "other". No call in flight before and after, and no call left in between (the
  // generations), and the level unmoved (events of this thread's own call, a resource
  // callback's). A few tries; under a storm of calls, at the next reading.
  constexpr int kTries = 3;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const std::optional<std::uint64_t> quiet_before = in_flight::quiet_generation();
    const std::int64_t before = target->level();
    const std::optional<std::uint64_t> usage = own_usage(device, listed_before);
    const std::optional<std::uint64_t> quiet_after = in_flight::quiet_generation();
    const std::lock_guard lock(s.mutex);
    DeviceState& device_state = s.devices[device];
    const std::int64_t level = target->level();
    if (usage && (level != before || !quiet_before || quiet_after != quiet_before)) continue;
    device_state.reconciled = usage.has_value();
    device_state.unsettled = false;  // settled by this reading, or nothing to settle against
    if (!usage) return false;
    const std::int64_t events = level - device_state.other;
    const std::int64_t other =
        std::max<std::int64_t>(0, static_cast<std::int64_t>(*usage) - events);
    account_exact(device, other - device_state.other);
    device_state.other = other;
    return true;
  }
  return false;
}

void refresh_for_reading(int device) noexcept {
  if (!valid(device) || !driver::cuda_initialized()) {
    reconcile(device);
    return;
  }
  {
    State& s = state();
    const std::lock_guard lock(s.mutex);
    try {
      known_pool(s, current_pool(s.devices[device], device), device);
    } catch (...) {
      // Out of memory for the pool list: the current pool goes unseen until an allocation.
    }
    for (Pool& pool : s.pools) {
      if (pool.device == device) refresh(s, pool);
    }
    refresh_graphs_locked(s, device);
  }
  reconcile(device);
}

std::uint32_t coverage(int device) noexcept {
  std::uint32_t covers = coverage::allocations | coverage::vmm;
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.memPoolGetAttribute != nullptr) covers |= coverage::pools;
  if (cuda.deviceGetGraphMemAttribute != nullptr) covers |= coverage::graphs;
  if (valid(device)) {
    State& s = state();
    const std::lock_guard lock(s.mutex);
    if (s.devices[device].reconciled) covers |= coverage::context;
  }
  return covers;
}

void clear() noexcept {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  s.pools.clear();
  for (DeviceState& device_state : s.devices) device_state = DeviceState{};
  s.any_reservation.store(false, std::memory_order_relaxed);
}

}  // namespace gpumem::peak::footprint

namespace gpumem::detail {

void set_footprint_reconciliation(bool enabled) noexcept {
  peak::footprint::g_reconciliation.store(enabled, std::memory_order_relaxed);
}

}  // namespace gpumem::detail
