#include "peak/vmm_tracker.hpp"

#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attribution/stacks.hpp"
#include "gpumem/attribution.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/exact_callbacks.hpp"

namespace gpumem::peak::vmm {
namespace {

using abi::CUdeviceptr;
using abi::CUmemGenericAllocationHandle;

// A physical allocation, named by an id of ours: once its last reference is released the
// driver may hand its handle value to a new allocation while this one is still mapped.
struct Physical {
  std::uint64_t bytes = 0;
  int device = 0;
  int references = 1;
  int mappings = 0;
};
struct Mapping {
  std::uint64_t bytes = 0;
  std::uint64_t id = 0;
};

struct State {
  std::mutex mutex;
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, Physical> physical;
  std::unordered_map<CUmemGenericAllocationHandle, std::uint64_t> handles;  // live references
  std::map<CUdeviceptr, Mapping> mappings;                                  // by start address
};

State& state() {
  static State* const instance = new State;  // never destroyed: callbacks may come during exit
  return *instance;
}

// What this thread's release or unmap took at ENTER (one driver call at a time per thread).
thread_local std::uint64_t t_releasing = 0;
thread_local CUmemGenericAllocationHandle t_releasing_handle = 0;
thread_local std::vector<std::pair<CUdeviceptr, Mapping>> t_unmapping;

// In attribution mode a physical allocation is a block of kind vmm, keyed apart from device
// addresses by its id (cuMemCreate's handle values may be reused while it is still mapped).
std::uint64_t block_key(std::uint64_t id) noexcept {
  return attribution::kVmmKeyTag | id;
}

// Requires the mutex. Uncounts the allocation once nothing holds it.
void settle(State& s, std::uint64_t id) {
  const auto found = s.physical.find(id);
  if (found == s.physical.end()) return;
  if (found->second.references > 0 || found->second.mappings > 0) return;
  const auto delta = -static_cast<std::int64_t>(found->second.bytes);
  if (attribution::active()) {
    attribution::BlockEvent event;
    event.key = block_key(id);
    account_exact(found->second.device, delta, &event);
  } else {
    account_exact(found->second.device, delta);
  }
  s.physical.erase(found);
}

}  // namespace

void created(CUmemGenericAllocationHandle handle, std::uint64_t bytes, int device) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const std::uint64_t id = s.next_id++;
  s.physical[id] = Physical{bytes, device, 1, 0};
  s.handles[handle] = id;
  if (attribution::active()) {
    attribution::BlockEvent event;
    event.key = block_key(id);
    event.bytes = bytes;
    event.kind = static_cast<std::uint8_t>(BlockKind::vmm);
    event.stack = gpumem::attribution::capture_stack();
    event.allocation = true;
    return account_exact(device, static_cast<std::int64_t>(bytes), &event);
  }
  account_exact(device, static_cast<std::int64_t>(bytes));
}

void retained(CUmemGenericAllocationHandle handle) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto id = s.handles.find(handle);
  if (id != s.handles.end()) ++s.physical[id->second].references;
}

void mapped(CUdeviceptr address, std::uint64_t bytes, CUmemGenericAllocationHandle handle) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto id = s.handles.find(handle);
  if (id == s.handles.end()) return;  // created before tracing: its size is unknown here
  ++s.physical[id->second].mappings;
  s.mappings[address] = Mapping{bytes, id->second};
}

void releasing(CUmemGenericAllocationHandle handle) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto id = s.handles.find(handle);
  t_releasing = id != s.handles.end() ? id->second : 0;
  t_releasing_handle = handle;
}

void released(bool succeeded) {
  const std::uint64_t id = std::exchange(t_releasing, 0);
  if (!succeeded || id == 0) return;
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto found = s.physical.find(id);
  if (found == s.physical.end()) return;
  if (--found->second.references == 0) {
    const auto link = s.handles.find(t_releasing_handle);
    if (link != s.handles.end() && link->second == id) s.handles.erase(link);
  }
  settle(s, id);
}

void unmapping(CUdeviceptr address, std::uint64_t bytes) {
  t_unmapping.clear();
  State& s = state();
  const std::lock_guard lock(s.mutex);
  for (auto it = s.mappings.lower_bound(address);
       it != s.mappings.end() && it->first < address + bytes; ++it) {
    t_unmapping.push_back(*it);
  }
}

void unmapped(bool succeeded) {
  if (!succeeded || t_unmapping.empty()) return t_unmapping.clear();
  State& s = state();
  const std::lock_guard lock(s.mutex);
  for (const auto& [address, mapping] : t_unmapping) {
    const auto found = s.mappings.find(address);
    if (found == s.mappings.end() || found->second.id != mapping.id) continue;  // remapped since
    s.mappings.erase(found);
    const auto physical = s.physical.find(mapping.id);
    if (physical == s.physical.end()) continue;
    --physical->second.mappings;
    settle(s, mapping.id);
  }
  t_unmapping.clear();
}

void clear() {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  s.physical.clear();
  s.handles.clear();
  s.mappings.clear();
}

}  // namespace gpumem::peak::vmm
