// The simulated CUDA driver's per-process state: initialisation and enumeration, contexts (one
// reference-counted primary context per device plus those cuCtxCreate makes), the calling thread's
// context stack, and this process's live allocations.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/shared_state.hpp"
#include "driver/abi/cuda.hpp"

struct gpumem::abi::CUctx_st {
  unsigned nvml_index;
  int ordinal;
  bool primary;
  std::atomic<std::uint32_t> uid;  // CUPTI's contextUid: new for each context created
  // Primary: references (0: inactive, no memory charged). Created: 1 while alive, 0 destroyed.
  std::atomic<int> retained;
};

namespace gpumem::sim::cuda {

using namespace gpumem::abi;

// The device memory page: what cuMemGetAllocationGranularity reports, the unit VMM handles, pool
// reservations and graph reservations are made of, and what a module's image is rounded up to.
inline constexpr std::uint64_t kPageBytes = 2ull << 20;

inline std::uint64_t round_up(std::uint64_t value, std::uint64_t to) {
  return (value + to - 1) / to * to;
}

// pool: a stream-ordered block; graph: a graph allocation left live after its graph's launch. Both
// are charged through their pool's or the device's graph reservation, not one by one.
enum class AllocationKind { device, managed, pool, graph };

struct Allocation {
  std::uint64_t bytes;  // what the caller asked for (the charge for device allocations)
  unsigned nvml_index;
  AllocationKind kind;
  CUcontext owner;  // the context it was made in; destroying that context frees it
  CUmemoryPool pool;
  bool resident = false;      // managed memory prefetched to a device (charged there)
  std::uint64_t charged = 0;  // what the device was charged for it (device kind, resident managed)
};

// What a plain allocation of `bytes` is charged: rounded up to the config's page_bytes, if any.
std::uint64_t charge_for(std::uint64_t bytes);

// Runs the driver's one-time initialisation; CUDA_SUCCESS, or why it failed.
CUresult initialize();
bool initialized();

// CUDA ordinal → NVML index, fixed at initialisation.
int device_count();
// CUDA_SUCCESS for an initialised driver and a valid ordinal; else the driver's error for it.
CUresult check_device(CUdevice device);
unsigned nvml_index(int ordinal);
int ordinal_of_nvml(unsigned nvml);  // -1 when not visible
SharedState& state();

CUcontext primary_context(int ordinal);
int ordinal_of(CUcontext context);  // -1 when not one of ours (destroyed contexts still are)
CUcontext& current_context();       // of the calling thread: the top of its context stack
void push_context(CUcontext context);
CUcontext pop_context();  // nullptr when the stack is empty

// Primary context lifetime: the first retain creates the context (charging the device's context
// memory); the last release, or a reset, destroys it with every allocation made in it.
CUresult retain_primary(int ordinal);
CUresult release_primary(int ordinal);
CUresult reset_primary(int ordinal);
// cuCtxCreate / cuCtxDestroy.
CUresult create_context(int ordinal, CUcontext* context);
CUresult destroy_context(CUcontext context);
// A context that is alive (primary and retained, or created and not destroyed).
bool context_alive(CUcontext context);

// The current context's NVML device, or the error a memory call returns.
CUresult current_device(unsigned* nvml);

// A fresh device virtual address range of `bytes` aligned to `alignment`.
std::uint64_t new_address_range(std::uint64_t bytes, std::uint64_t alignment);

// Charges (device kind only) and records an allocation of the current context; returns its address.
CUresult allocate(unsigned nvml, std::uint64_t bytes, AllocationKind kind, std::uint64_t* address,
                  CUmemoryPool pool = nullptr);
// Records an allocation at a fixed address (a graph allocation at its node's address); no charge.
void record(std::uint64_t address, const Allocation& allocation);
bool live_allocation(std::uint64_t address);
// Frees a live allocation of any kind (a pool block goes back to its pool).
CUresult release(std::uint64_t address);
bool find_allocation(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes);
// A VMM mapping that holds `address` (vmm.cpp).
bool find_mapping(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes);
// Stream-ordered pools (pools.cpp): a freed block returns to its pool; at a synchronisation on the
// device every pool gives back what it reserves above its release threshold.
void pool_block_freed(const Allocation& block);
// Graph memory (graphs.cpp): a graph allocation freed outside its graph.
void graph_block_freed(const Allocation& block);
void release_above_threshold(unsigned nvml);
// Runs `fn` on the live allocation that holds `address` (under the allocation lock).
template <class Fn>
bool with_allocation(std::uint64_t address, Fn&& fn);

// Per-subsystem hooks the context code calls (defined in modules.cpp, vmm.cpp, pools.cpp,
// graphs.cpp).
void unload_modules_of(CUcontext context);  // fires MODULE_UNLOAD_STARTING for each
// A forked child owns none of its parent's memory objects; its loaded modules, like its
// contexts, are charged to it afresh.
void modules_after_fork();
void vmm_after_fork();
void pools_after_fork();
void graphs_after_fork();

// The resource-domain callback (CUPTI_CB_DOMAIN_RESOURCE) for a context or module event.
void resource_event(std::uint32_t cbid, CUcontext context, void* descriptor);

// The allocation table, for with_allocation.
std::mutex& allocation_mutex();
Allocation* find_locked(std::uint64_t address);

template <class Fn>
bool with_allocation(std::uint64_t address, Fn&& fn) {
  std::lock_guard lock(allocation_mutex());
  Allocation* allocation = find_locked(address);
  if (allocation == nullptr) return false;
  fn(*allocation);
  return true;
}

}  // namespace gpumem::sim::cuda
