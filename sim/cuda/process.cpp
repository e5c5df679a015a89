#include "process.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <new>

#if defined(__SANITIZE_THREAD__)
#define GPUMEM_SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUMEM_SIM_TSAN 1
#endif
#endif
#ifdef GPUMEM_SIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include "core/visible_devices.hpp"
#include "driver/abi/cupti.hpp"
#include "trace_hook.hpp"

namespace gpumem::sim::cuda {
namespace {

struct Driver {
  std::once_flag once;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
  std::atomic<bool> ready{false};
  SharedState* state = nullptr;
  std::vector<unsigned> ordinals;  // NVML index of each CUDA ordinal
  CUctx_st contexts[kMaxDevices];  // the primary contexts, by NVML index
  int reset_debt[kMaxDevices]{};   // references a reset dropped, still to be released
  // Serialises context creation and destruction; recursive because resource callbacks, fired
  // under it, may call back into the driver.
  std::recursive_mutex context_mutex;
  std::vector<CUctx_st*> created;  // cuCtxCreate contexts, never freed (stale handles stay valid)

  std::mutex allocation_mutex;
  std::map<std::uint64_t, Allocation> allocations;
  std::mutex address_mutex;
  std::uint64_t next_address = 0x7f0000000000ull;
};

Driver& driver() {
  static Driver* d = new Driver;  // never destroyed: other threads may still call in at exit
  return *d;
}

std::atomic<std::uint32_t>& next_uid() {
  static std::atomic<std::uint32_t> next{1};
  return next;
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
    for (CUctx_st* context : d.created) {
      if (context->retained.load() > 0)
        d.state->charge(context->nvml_index, d.state->device(context->nvml_index).context_bytes);
    }
  }
  d.allocation_mutex.unlock();
  // A recursive mutex remembers its owner by thread id, and the child's thread has a new one:
  // unlocking would fail (EPERM, ignored) and leave it held, so that the child's own next fork
  // (or context call) waits forever. The child is single-threaded: a fresh mutex is exact.
#ifdef GPUMEM_SIM_TSAN
  // ThreadSanitizer saw prepare_fork() lock it and must see it let go, or it takes every lock the
  // child takes afterwards as taken under this one (a lock-order inversion that is not there).
  __tsan_mutex_pre_unlock(&d.context_mutex, 0);
  __tsan_mutex_post_unlock(&d.context_mutex, 0);
#endif
  new (&d.context_mutex) std::recursive_mutex;
  modules_after_fork();
  vmm_after_fork();
  pools_after_fork();
  graphs_after_fork();
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
  for (unsigned i = 0; i < kMaxDevices; ++i) {
    d.contexts[i].nvml_index = i;
    d.contexts[i].ordinal = ordinal_of_nvml(i);
    d.contexts[i].primary = true;
    d.contexts[i].uid = 0;
    d.contexts[i].retained = 0;
  }
  ::pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  d.init_result = d.ordinals.empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
  d.ready.store(d.init_result == CUDA_SUCCESS, std::memory_order_release);
}

// Charges a new context's memory and announces it (CUPTI's CONTEXT_CREATED comes once the context
// exists). Called under the context lock.
CUresult create_locked(CUctx_st& context) {
  Driver& d = driver();
  const unsigned nvml = context.nvml_index;
  if (d.state->lost(nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  if (!d.state->charge(nvml, d.state->device(nvml).context_bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  context.uid.store(
      next_uid().fetch_add(1));  // a new context each time, as CUPTI's contextUid tells
  context.retained.store(1);
  resource_event(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &context, nullptr);
  return CUDA_SUCCESS;
}

bool other_context_alive(unsigned nvml) {
  Driver& d = driver();
  if (d.contexts[nvml].retained.load() > 0) return true;
  for (const CUctx_st* context : d.created) {
    if (context->nvml_index == nvml && context->retained.load() > 0) return true;
  }
  return false;
}

// Destroys a context: CONTEXT_DESTROY_STARTING, its modules unloaded, every allocation made in it
// freed (not VMM or stream-ordered memory: cuCtxDestroy's documentation says those belong to no
// context), then its own memory. A process left holding nothing on the device leaves it (NVML no
// longer lists it). Called under the context lock.
void destroy_locked(CUctx_st& context) {
  Driver& d = driver();
  const unsigned nvml = context.nvml_index;
  resource_event(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &context, nullptr);
  unload_modules_of(&context);
  {
    std::lock_guard allocations(d.allocation_mutex);
    for (auto it = d.allocations.begin(); it != d.allocations.end();) {
      const Allocation& a = it->second;
      if (a.owner != &context || a.kind == AllocationKind::pool ||
          a.kind == AllocationKind::graph) {
        ++it;
        continue;
      }
      if (a.charged != 0) d.state->uncharge(a.nvml_index, a.charged);
      it = d.allocations.erase(it);
    }
  }
  context.retained.store(0);
  d.state->uncharge(nvml, d.state->device(nvml).context_bytes);
  if (!other_context_alive(nvml) && d.state->own_bytes(nvml) == 0) d.state->leave(nvml);
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
CUresult check_device(CUdevice device) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}
unsigned nvml_index(int ordinal) {
  return driver().ordinals[static_cast<std::size_t>(ordinal)];
}
int ordinal_of_nvml(unsigned nvml) {
  const auto& ordinals = driver().ordinals;
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    if (ordinals[i] == nvml) return static_cast<int>(i);
  }
  return -1;
}
SharedState& state() {
  return *driver().state;
}

CUcontext primary_context(int ordinal) {
  return &driver().contexts[nvml_index(ordinal)];
}

int ordinal_of(CUcontext context) {
  Driver& d = driver();
  if (context >= &d.contexts[0] && context < &d.contexts[kMaxDevices]) return context->ordinal;
  std::lock_guard lock(d.context_mutex);
  for (const CUctx_st* created : d.created) {
    if (created == context) return created->ordinal;
  }
  return -1;
}

namespace {
// Trivially destructible (a fixed depth, a sim choice): a thread_local of a dlopen'ed library with
// a destructor trips LeakSanitizer's scan of dynamic TLS.
struct ContextStack {
  static constexpr int kDepth = 64;
  CUcontext top = nullptr;
  CUcontext below[kDepth];
  int depth = 0;
};
ContextStack& stack() {
  thread_local ContextStack s;
  return s;
}
}  // namespace

CUcontext& current_context() {
  return stack().top;
}
// Beyond kDepth the oldest entry is dropped.
void push_context(CUcontext context) {
  ContextStack& s = stack();
  if (s.top != nullptr) {
    if (s.depth == ContextStack::kDepth) {
      std::copy(s.below + 1, s.below + s.depth, s.below);
      --s.depth;
    }
    s.below[s.depth++] = s.top;
  }
  s.top = context;
}
CUcontext pop_context() {
  ContextStack& s = stack();
  const CUcontext popped = s.top;
  s.top = s.depth == 0 ? nullptr : s.below[--s.depth];
  return popped;
}

bool context_alive(CUcontext context) {
  return context != nullptr && context->retained.load(std::memory_order_relaxed) > 0;
}

CUresult retain_primary(int ordinal) {
  Driver& d = driver();
  const unsigned nvml = nvml_index(ordinal);
  std::lock_guard lock(d.context_mutex);
  CUctx_st& context = d.contexts[nvml];
  if (context.retained.load() == 0) return create_locked(context);
  context.retained.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult release_primary(int ordinal) {
  Driver& d = driver();
  const unsigned nvml = nvml_index(ordinal);
  std::lock_guard lock(d.context_mutex);
  CUctx_st& context = d.contexts[nvml];
  if (context.retained.load() == 0) {
    // "It is safe for other modules to call cuDevicePrimaryCtxRelease() even after resetting".
    if (d.reset_debt[nvml] > 0) {
      --d.reset_debt[nvml];
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (context.retained.load() > 1) {
    context.retained.fetch_sub(1);
    return CUDA_SUCCESS;
  }
  destroy_locked(context);
  return CUDA_SUCCESS;
}

// Destroys the primary context's resources now; the references taken stay to be released.
CUresult reset_primary(int ordinal) {
  Driver& d = driver();
  const unsigned nvml = nvml_index(ordinal);
  std::lock_guard lock(d.context_mutex);
  CUctx_st& context = d.contexts[nvml];
  const int references = context.retained.load();
  if (references == 0) return CUDA_SUCCESS;
  destroy_locked(context);
  d.reset_debt[nvml] += references;
  return CUDA_SUCCESS;
}

CUresult create_context(int ordinal, CUcontext* out) {
  Driver& d = driver();
  std::lock_guard lock(d.context_mutex);
  auto* context = new CUctx_st;
  context->nvml_index = nvml_index(ordinal);
  context->ordinal = ordinal;
  context->primary = false;
  context->retained = 0;
  d.created.push_back(context);
  if (const CUresult rc = create_locked(*context)) return rc;
  *out = context;
  return CUDA_SUCCESS;
}

CUresult destroy_context(CUcontext context) {
  Driver& d = driver();
  std::lock_guard lock(d.context_mutex);
  if (context == nullptr || context->primary || ordinal_of(context) < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context->retained.load() == 0) return CUDA_ERROR_INVALID_CONTEXT;
  destroy_locked(*context);
  if (current_context() == context) pop_context();
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

std::uint64_t new_address_range(std::uint64_t bytes, std::uint64_t alignment) {
  Driver& d = driver();
  std::lock_guard lock(d.address_mutex);
  const std::uint64_t address = round_up(d.next_address, alignment);
  d.next_address = address + round_up(bytes == 0 ? 1 : bytes, 512);
  return address;
}

std::uint64_t charge_for(std::uint64_t bytes) {
  const std::uint64_t page = driver().state->file().page_bytes;
  return page == 0 ? bytes : round_up(bytes, page);
}

CUresult allocate(unsigned nvml, std::uint64_t bytes, AllocationKind kind, std::uint64_t* address,
                  CUmemoryPool pool) {
  Driver& d = driver();
  const std::uint64_t charged = kind == AllocationKind::device ? charge_for(bytes) : 0;
  if (charged != 0 && !d.state->charge(nvml, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  *address = new_address_range(bytes, 512);
  Allocation allocation{bytes, nvml, kind, current_context(), pool};
  allocation.charged = charged;
  std::lock_guard lock(d.allocation_mutex);
  d.allocations.emplace(*address, allocation);
  return CUDA_SUCCESS;
}

void record(std::uint64_t address, const Allocation& allocation) {
  std::lock_guard lock(driver().allocation_mutex);
  driver().allocations.emplace(address, allocation);
}

bool live_allocation(std::uint64_t address) {
  std::lock_guard lock(driver().allocation_mutex);
  return driver().allocations.count(address) != 0;
}

CUresult release(std::uint64_t address) {
  Driver& d = driver();
  Allocation allocation;
  {
    std::lock_guard lock(d.allocation_mutex);
    const auto it = d.allocations.find(address);
    if (it == d.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
    allocation = it->second;
    if (allocation.kind != AllocationKind::managed && d.state->lost(allocation.nvml_index)) {
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    d.allocations.erase(it);
  }
  if (allocation.charged != 0) d.state->uncharge(allocation.nvml_index, allocation.charged);
  if (allocation.kind == AllocationKind::pool) pool_block_freed(allocation);
  if (allocation.kind == AllocationKind::graph) graph_block_freed(allocation);
  return CUDA_SUCCESS;
}

std::mutex& allocation_mutex() {
  return driver().allocation_mutex;
}

Allocation* find_locked(std::uint64_t address) {
  auto& allocations = driver().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  if (address >= it->first + std::max<std::uint64_t>(it->second.bytes, 1)) return nullptr;
  return &it->second;
}

bool find_allocation(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.allocation_mutex);
  auto it = d.allocations.upper_bound(address);
  if (it == d.allocations.begin()) return false;
  --it;
  if (address >= it->first + std::max<std::uint64_t>(it->second.bytes, 1)) return false;
  *base = it->first;
  *bytes = it->second.bytes;
  return true;
}

void resource_event(std::uint32_t cbid, CUcontext context, void* descriptor) {
  const GpumemSimDispatch dispatch = g_dispatch.load(std::memory_order_acquire);
  if (dispatch == nullptr) return;
  CUpti_ResourceData data{};
  data.context = context;
  data.resourceHandle = nullptr;
  data.resourceDescriptor = descriptor;
  dispatch(CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
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
