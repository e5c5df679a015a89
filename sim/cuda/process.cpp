#include "process.hpp"

#include <pthread.h>

#include <cstdlib>
#include <map>

#include "core/visible_devices.hpp"

namespace gpumem::sim::cuda {
namespace {

struct Driver {
  std::once_flag once;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
  std::atomic<bool> ready{false};
  SharedState* state = nullptr;
  std::vector<unsigned> ordinals;  // NVML index of each CUDA ordinal
  CUctx_st contexts[kMaxDevices];
  std::mutex context_mutex;  // serialises primary context creation and destruction

  std::mutex allocation_mutex;
  std::map<std::uint64_t, Allocation> allocations;
  std::uint64_t next_address = 0x7f0000000000ull;
};

Driver& driver() {
  static Driver* d = new Driver;  // never destroyed: other threads may still call in at exit
  return *d;
}

// A forked child owns none of its parent's memory; its contexts (still current on the forking
// thread) are charged to it afresh, as a new process.
void prepare_fork() {
  driver().context_mutex.lock();
  driver().allocation_mutex.lock();
}
void parent_after_fork() {
  driver().allocation_mutex.unlock();
  driver().context_mutex.unlock();
}
void child_after_fork() {
  Driver& d = driver();
  d.allocations.clear();
  if (d.state != nullptr) {
    for (unsigned i = 0; i < d.state->device_count(); ++i) {
      if (d.contexts[i].retained.load() > 0) d.state->charge(i, d.state->device(i).context_bytes);
    }
  }
  d.allocation_mutex.unlock();
  d.context_mutex.unlock();
}

void enumerate(Driver& d) {
  d.state = SharedState::get();
  if (d.state == nullptr) {
    std::fprintf(stderr, "gpumem-sim: %s\n", SharedState::open_error().c_str());
    d.init_result = CUDA_ERROR_UNKNOWN;
    return;
  }
  std::vector<EnumeratedDevice> devices;
  std::vector<int> fastest_first;
  for (unsigned i = 0; i < d.state->device_count(); ++i) {
    devices.push_back({d.state->device(i).uuid, d.state->device(i).pci});
    fastest_first.push_back(d.state->file().cuda_order[i]);
  }
  for (int index : cuda_enumeration(devices, fastest_first, std::getenv("CUDA_DEVICE_ORDER"),
                                    std::getenv("CUDA_VISIBLE_DEVICES"))) {
    d.ordinals.push_back(static_cast<unsigned>(index));
  }
  static std::atomic<std::uint32_t> next_uid{1};
  for (unsigned i = 0; i < kMaxDevices; ++i) {
    d.contexts[i].nvml_index = i;
    d.contexts[i].uid = next_uid++;
    d.contexts[i].retained = 0;
  }
  ::pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  d.init_result = d.ordinals.empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
  d.ready.store(d.init_result == CUDA_SUCCESS, std::memory_order_release);
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t to) {
  return (value + to - 1) / to * to;
}

}  // namespace

CUresult initialize() {
  Driver& d = driver();
  std::call_once(d.once, [&] { enumerate(d); });
  return d.init_result;
}

bool initialized() {
  return driver().ready.load(std::memory_order_acquire);
}
int device_count() {
  return static_cast<int>(driver().ordinals.size());
}
unsigned nvml_index(int ordinal) {
  return driver().ordinals[static_cast<std::size_t>(ordinal)];
}
SharedState& state() {
  return *driver().state;
}

CUcontext primary_context(int ordinal) {
  return &driver().contexts[nvml_index(ordinal)];
}

int ordinal_of(CUcontext context) {
  const auto& ordinals = driver().ordinals;
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    if (&driver().contexts[ordinals[i]] == context) return static_cast<int>(i);
  }
  return -1;
}

CUcontext& current_context() {
  thread_local CUcontext current = nullptr;
  return current;
}

CUresult retain_primary(int ordinal) {
  Driver& d = driver();
  const unsigned nvml = nvml_index(ordinal);
  std::lock_guard lock(d.context_mutex);
  CUctx_st& context = d.contexts[nvml];
  if (context.retained.load() == 0) {
    if (d.state->lost(nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (!d.state->charge(nvml, d.state->device(nvml).context_bytes))
      return CUDA_ERROR_OUT_OF_MEMORY;
  }
  context.retained.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult release_primary(int ordinal) {
  Driver& d = driver();
  const unsigned nvml = nvml_index(ordinal);
  std::lock_guard lock(d.context_mutex);
  CUctx_st& context = d.contexts[nvml];
  if (context.retained.load() == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (context.retained.fetch_sub(1) > 1) return CUDA_SUCCESS;
  // Destroying the context frees everything allocated in it (VMM handles outlive it).
  bool vmm_left = false;
  {
    std::lock_guard allocations(d.allocation_mutex);
    for (auto it = d.allocations.begin(); it != d.allocations.end();) {
      if (it->second.nvml_index != nvml) {
        ++it;
      } else if (it->second.kind == AllocationKind::vmm) {
        vmm_left = true;
        ++it;
      } else {
        if (it->second.kind == AllocationKind::device) d.state->uncharge(nvml, it->second.bytes);
        it = d.allocations.erase(it);
      }
    }
  }
  if (vmm_left) {
    d.state->uncharge(nvml, d.state->device(nvml).context_bytes);
  } else {
    d.state->leave(nvml);
  }
  return CUDA_SUCCESS;
}

CUresult current_device(unsigned* nvml) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext context = current_context();
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (context->retained.load(std::memory_order_relaxed) == 0)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *nvml = context->nvml_index;
  if (driver().state->lost(*nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  return CUDA_SUCCESS;
}

CUresult allocate(unsigned nvml, std::uint64_t bytes, AllocationKind kind, std::uint64_t* address) {
  Driver& d = driver();
  if (kind != AllocationKind::managed && !d.state->charge(nvml, bytes))
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(d.allocation_mutex);
  *address = d.next_address;
  d.next_address += round_up(bytes == 0 ? 1 : bytes, 512);
  d.allocations.emplace(*address, Allocation{bytes, nvml, kind});
  return CUDA_SUCCESS;
}

CUresult release(std::uint64_t address, AllocationKind kind) {
  Driver& d = driver();
  Allocation allocation;
  {
    std::lock_guard lock(d.allocation_mutex);
    const auto it = d.allocations.find(address);
    if (it == d.allocations.end() ||
        (it->second.kind == AllocationKind::vmm) != (kind == AllocationKind::vmm)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    allocation = it->second;
    if (allocation.kind != AllocationKind::managed && d.state->lost(allocation.nvml_index)) {
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    d.allocations.erase(it);
  }
  if (allocation.kind != AllocationKind::managed)
    d.state->uncharge(allocation.nvml_index, allocation.bytes);
  return CUDA_SUCCESS;
}

bool find_allocation(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.allocation_mutex);
  auto it = d.allocations.upper_bound(address);
  if (it == d.allocations.begin()) return false;
  --it;
  if (it->second.kind == AllocationKind::vmm) return false;
  if (address >= it->first + std::max<std::uint64_t>(it->second.bytes, 1)) return false;
  *base = it->first;
  *bytes = it->second.bytes;
  return true;
}

}  // namespace gpumem::sim::cuda

namespace {

// A process that exits releases its memory at once; one that dies is reclaimed by the others.
__attribute__((destructor)) void leave_devices_at_exit() {
  using namespace gpumem::sim::cuda;
  if (!initialized()) return;
  for (unsigned i = 0; i < state().device_count(); ++i) state().leave(i);
}

}  // namespace
