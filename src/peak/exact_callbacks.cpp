#include "peak/exact_callbacks.hpp"

#include <algorithm>
#include <cstdint>

#include "attribution/stacks.hpp"
#include "driver/cuda.hpp"
#include "gpumem/attribution.hpp"
#include "gpumem/device.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/event_observer_call.hpp"
#include "peak/footprint.hpp"
#include "peak/in_flight.hpp"
#include "peak/oom_record.hpp"
#include "peak/vmm_tracker.hpp"

namespace gpumem::peak {
namespace {

using namespace gpumem::abi;

// The legacy (pre-_v2) entry points take 32-bit device pointers and sizes.
struct cuMemAlloc_legacy_params {
  unsigned int* dptr;
  unsigned int bytesize;
};
struct cuMemFree_legacy_params {
  unsigned int dptr;
};

// A free's block travels from ENTER (where it still exists and can be asked about) to EXIT
// (where success is known) in the call's correlation data. It leaves the map at ENTER: once the
// driver has freed it, another thread may be handed the same address, and a late erase would
// take that thread's block instead. A failed free puts it back.
constexpr std::uint64_t kStashValid = 1ull << 63;
constexpr std::uint64_t kStashManaged = 1ull << 62;
constexpr int kStashDeviceShift = 56;
constexpr std::uint64_t kStashFromMap = 1ull << 55;  // taken out of the map at ENTER
constexpr std::uint64_t kStashSizeMask = kStashFromMap - 1;

std::uint64_t stash(const Block& block, bool from_map) noexcept {
  if (block.device < 0 || block.device >= kMaxDevices) return 0;  // no channel counts it
  return kStashValid | (block.managed ? kStashManaged : 0) | (from_map ? kStashFromMap : 0) |
         (static_cast<std::uint64_t>(block.device) << kStashDeviceShift) |
         (block.size & kStashSizeMask);
}

Block unstash(std::uint64_t stashed) noexcept {
  return Block{stashed & kStashSizeMask, static_cast<int>((stashed >> kStashDeviceShift) & 0x3f),
               (stashed & kStashManaged) != 0};
}

// An allocation's ENTER raised the run's bracketed level (exact_ledger.hpp): the level it reached
// travels to the EXIT in the call's correlation data, where it becomes the bracketed peak if the
// call succeeded. Levels are within ±2^54 bytes (a forged total is clamped, never wrapped).
constexpr std::int64_t kReachedBias = std::int64_t{1} << 54;

std::uint64_t stash_reached(std::int64_t level) noexcept {
  const std::int64_t clamped = std::clamp(level, -kReachedBias, kReachedBias - 1);
  return kStashValid | static_cast<std::uint64_t>(clamped + kReachedBias);
}

std::int64_t unstash_reached(std::uint64_t stashed) noexcept {
  return static_cast<std::int64_t>(stashed & ~kStashValid) - kReachedBias;
}

using Bracket = Channel::Bracket;
// The bracketed level moves with the level: an event outside a bracketed call.
Bracket unbracketed(std::int64_t delta) noexcept {
  return {delta, detail::kBracketAtLevel};
}
// The bracketed level stays: its call's other half moves it.
constexpr Bracket kLevelOnly{0, detail::kBracketNoPeak};

// What a thread carries from callback to callback. Initial-exec, and one block: under `gpumem
// run` the library is dlopen'ed, where the default model costs a __tls_get_addr call per
// access, on every event; the few bytes come out of the static TLS the loader keeps for that.
struct ThreadState {
  // The CUDA ordinal of the thread's last context (contextUid): a thread allocates on the same
  // context many times in a row.
  std::uint32_t cached_uid = 0;
  int cached_device = -1;
  // Whether the runtime call this thread is in reached the driver's own callbacks: real CUDA
  // may or may not raise driver-domain callbacks for the runtime's calls, so a runtime call
  // counts itself only where no driver callback came (never twice, never missed).
  int runtime_depth = 0;
  bool driver_seen = false;
};
[[gnu::tls_model("initial-exec")]] thread_local ThreadState t_state;

// The CUDA ordinal of the calling thread's context.
[[gnu::always_inline]] inline int event_device(const CUpti_CallbackData& call) noexcept {
  ThreadState& state = t_state;
  if (state.cached_device >= 0 && state.cached_uid == call.contextUid) return state.cached_device;
  CUdevice device = 0;
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.ctxGetDevice == nullptr || cuda.ctxGetDevice(&device) != CUDA_SUCCESS) return 0;
  state.cached_uid = call.contextUid;
  state.cached_device = device;
  return device;
}

bool succeeded(const CUpti_CallbackData& call) noexcept {
  return call.functionReturnValue != nullptr &&
         *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
}

[[gnu::always_inline]] inline void count(const Block& block, std::int64_t delta) noexcept {
  if (!block.managed) return account_exact(block.device, delta);
  if (Channel* target = channel(Stream::managed, block.device)) target->add(delta);
}

// A plain block allocated or freed: in attribution mode it also enters or leaves the device's
// live-block table, with the allocating stack.
[[gnu::always_inline]] inline void count_block(const Block& block, std::uint64_t address,
                                               bool allocation, Bracket bracket) noexcept {
  const auto delta = static_cast<std::int64_t>(block.size);
  if (block.managed) return count(block, allocation ? delta : -delta);
  if (!attribution::active()) [[likely]] {
    // account_exact's own path, inline: every allocation and free of a plain block comes here.
    Channel* target = channel(Stream::exact, block.device);
    if (target != nullptr && delta != 0) target->add(allocation ? delta : -delta, bracket);
    return;
  }
  attribution::BlockEvent event;
  event.key = address;
  event.allocation = allocation;
  if (allocation) {
    event.bytes = block.size;
    event.kind = static_cast<std::uint8_t>(BlockKind::device);
    event.stack = gpumem::attribution::capture_stack();
  }
  Channel* target = channel(Stream::exact, block.device);
  if (target != nullptr)
    attribution::record(*target, block.device, allocation ? delta : -delta, &event, bracket);
}
[[gnu::always_inline]] inline void count_block(const Block& block, std::uint64_t address,
                                               bool allocation) noexcept {
  const auto delta = static_cast<std::int64_t>(block.size);
  count_block(block, address, allocation, unbracketed(allocation ? delta : -delta));
}

bool out_of_memory(const CUpti_CallbackData& call) noexcept {
  return call.functionReturnValue != nullptr &&
         *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_ERROR_OUT_OF_MEMORY;
}

void driver_event() noexcept {
  ThreadState& state = t_state;
  if (state.runtime_depth > 0) state.driver_seen = true;
}

// An allocation's ENTER, before the driver charges anything: the run's bracketed level rises by
// the size asked for (a plain block's: the managed stream has no bracketed level).
[[gnu::always_inline]] inline void allocating(const CUpti_CallbackData& call,
                                              std::uint64_t requested) noexcept {
  if (call.correlationData == nullptr) return;
  *call.correlationData = 0;
  if (requested == 0 || requested > static_cast<std::uint64_t>(kReachedBias)) return;
  Channel* target = channel(Stream::exact, event_device(call));
  if (target == nullptr) return;
  const std::int64_t reached =
      target->bracket({static_cast<std::int64_t>(requested), detail::kBracketNoPeak});
  if (reached != detail::kUnbracketed) *call.correlationData = stash_reached(reached);
}

// Its EXIT: the level rises by what was taken, and the bracketed level is corrected to it (back
// down when the call failed); a success raises the bracketed peak to where its ENTER took the
// bracketed level, with what the driver took beyond the size asked for (a pitch's padding).
// `requested`: what the ENTER raised it by (`size` unless the driver pads).
[[gnu::always_inline]] inline void allocated(const CUpti_CallbackData& call, std::uint64_t address,
                                             std::uint64_t size, std::uint64_t requested,
                                             bool managed) {
  if (call.callbackSite != CUPTI_API_EXIT) {
    if (!managed) allocating(call, requested);
    return;
  }
  const std::uint64_t entered = call.correlationData != nullptr ? *call.correlationData : 0;
  const bool bracketed = (entered & kStashValid) != 0 && !managed;
  const auto asked = static_cast<std::int64_t>(requested);
  if (!succeeded(call) || size == 0) {
    if (bracketed) {
      if (Channel* target = channel(Stream::exact, event_device(call)))
        target->bracket({-asked, detail::kBracketNoPeak});
    }
    if (!succeeded(call) && out_of_memory(call)) {
      allocation_failed(event_device(call), size, managed ? BlockKind::managed : BlockKind::device);
    }
    return;
  }
  driver_event();
  const Block block{size, event_device(call), managed};
  traced_addresses().insert(address, block);
  if (!bracketed) return count_block(block, address, true);
  const std::int64_t beyond = static_cast<std::int64_t>(size) - asked;
  count_block(block, address, true,
              {beyond, unstash_reached(entered) + std::max<std::int64_t>(beyond, 0)});
}

// EXIT of a free whose block was stashed, and counted, at ENTER: the run's bracketed level
// falls now, after the driver released it; a failed free counts it back, and puts it back in the
// map if it came from there.
[[gnu::always_inline]] inline void freed(const CUpti_CallbackData& call, AddressMap& map,
                                         std::uint64_t key) {
  const std::uint64_t stashed = *call.correlationData;
  if ((stashed & kStashValid) == 0) return;
  const Block block = unstash(stashed);
  if (succeeded(call)) {
    if (block.managed) return;
    if (Channel* target = channel(Stream::exact, block.device))
      target->bracket({-static_cast<std::int64_t>(block.size), detail::kBracketNoPeak});
    return;
  }
  count_block(block, key, true, block.managed ? unbracketed(0) : kLevelOnly);
  if ((stashed & kStashFromMap) != 0) map.insert(key, block);
}

// A free's ENTER: the level falls now, before the driver releases the block, and the bracketed
// level at its EXIT (a free made in a pool keeps the pool's reservation: nothing is stashed).
[[gnu::always_inline]] inline void freeing_now(const CUpti_CallbackData& call,
                                               std::uint64_t address, std::uint64_t stashed) {
  *call.correlationData = stashed;
  if (stashed == 0) return;
  const Block block = unstash(stashed);
  count_block(block, address, false, block.managed ? unbracketed(0) : kLevelOnly);
}

// `pooled`: a stream-ordered free, whose block (unless it is one of the map's) returns to its
// pool, which keeps the reservation: nothing to subtract.
[[gnu::always_inline]] inline void freeing(const CUpti_CallbackData& call, std::uint64_t address,
                                           bool pooled = false) {
  if (call.correlationData == nullptr) return;
  if (call.callbackSite != CUPTI_API_ENTER) {
    driver_event();
    return freed(call, traced_addresses(), address);
  }
  *call.correlationData = 0;
  if (address == 0) return;
  if (const std::optional<Block> block = traced_addresses().erase(address)) {
    return freeing_now(call, address, stash(*block, true));
  }
  if (pooled) return;
  // Allocated before tracing began: the driver still knows its size.
  const driver::Cuda& cuda = driver::cuda();
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuda.memGetAddressRange == nullptr ||
      cuda.memGetAddressRange(&base, &size, address) != CUDA_SUCCESS || base != address) {
    return;
  }
  freeing_now(call, address, stash(Block{size, event_device(call), false}, false));
}

bool at_exit(const CUpti_CallbackData& call) noexcept {
  return call.callbackSite == CUPTI_API_EXIT;
}
bool succeeded_exit(const CUpti_CallbackData& call) noexcept {
  return at_exit(call) && succeeded(call);
}

void vmm_created(const CUpti_CallbackData& call, const cuMemCreate_params& params) {
  if (!succeeded_exit(call) || params.handle == nullptr || params.prop == nullptr ||
      params.prop->locationType != CU_MEM_LOCATION_TYPE_DEVICE) {
    return;
  }
  vmm::created(*params.handle, params.size, params.prop->locationId);
}

void reconcile_all() noexcept {
  if (!footprint::reconciling()) return;  // counting the devices would start NVML
  const int devices = std::min(device_count(), kMaxDevices);
  for (int device = 0; device < devices; ++device) footprint::reconcile(device);
}

// The resource domain: contexts and modules take device memory that no allocation call shows.
void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData& data) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
      detail::notify_context_observer();
      return reconcile_all();
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
      return reconcile_all();
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
      // The context's allocations die with it (VMM memory and pools are the device's, and stay).
      const int device = driver::context_device(data.context);
      if (device < 0) return;
      for (const Block& block : traced_addresses().erase_device(device)) {
        count(block, -static_cast<std::int64_t>(block.size));
      }
      if (attribution::active()) {
        attribution::forget_kind(device, static_cast<std::uint8_t>(BlockKind::device));
      }
      footprint::current_pool_changed(device);
      return;
    }
    default:
      return;
  }
}

// The runtime's cudaErrorMemoryAllocation.
constexpr int kCudaErrorMemoryAllocation = 2;

// Runtime calls: only where the driver's callbacks did not see the call.
void on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
  ThreadState& state = t_state;
  if (call.callbackSite == CUPTI_API_ENTER) {
    if (state.runtime_depth++ == 0) state.driver_seen = false;
    return;
  }
  if (state.runtime_depth > 0 && --state.runtime_depth > 0) return;
  if (state.driver_seen || call.functionParams == nullptr) return;
  const int device = event_device(call);
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& params = *static_cast<const cudaMalloc_v3020_params*>(call.functionParams);
      if (!succeeded(call) && call.functionReturnValue != nullptr &&
          *static_cast<const int*>(call.functionReturnValue) == kCudaErrorMemoryAllocation) {
        return allocation_failed(device, params.size, BlockKind::device);
      }
      if (params.devPtr == nullptr || !succeeded(call) || params.size == 0) return;
      const Block block{params.size, device, false};
      const auto address = reinterpret_cast<std::uint64_t>(*params.devPtr);
      traced_addresses().insert(address, block);
      return count_block(block, address, true);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
      const auto& params = *static_cast<const cudaFree_v3020_params*>(call.functionParams);
      if (!succeeded(call)) return;
      const auto address = reinterpret_cast<std::uint64_t>(params.devPtr);
      if (const std::optional<Block> block = traced_addresses().erase(address)) {
        count_block(*block, address, false);
      }
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      return footprint::refresh_for_reading(device);
    default:
      return;
  }
}

template <class Params>
const Params& params_of(const CUpti_CallbackData& call) {
  return *static_cast<const Params*>(call.functionParams);
}

// A stream-ordered allocation: what the device holds is its pool's reservation, which the pool
// keeps after frees; the driver reports it.
void pool_allocated(const CUpti_CallbackData& call, CUmemoryPool pool) {
  if (!at_exit(call)) return;
  driver_event();
  if (succeeded(call)) footprint::pool_used(pool, event_device(call));
}

void dispatch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
  if (call.functionParams == nullptr) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& params = params_of<cuMemAlloc_v2_params>(call);
      if (params.dptr != nullptr)
        allocated(call, *params.dptr, params.bytesize, params.bytesize, false);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return pool_allocated(call, nullptr);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return pool_allocated(call, params_of<cuMemAllocFromPoolAsync_params>(call).pool);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& params = params_of<cuMemAllocPitch_v2_params>(call);
      if (params.dptr != nullptr && params.pPitch != nullptr) {
        // A failed call sets no pitch (nor does its ENTER have one): the request is the unpadded
        // rows.
        const std::uint64_t asked = params.WidthInBytes * params.Height;
        allocated(call, *params.dptr,
                  at_exit(call) && succeeded(call) ? *params.pPitch * params.Height : asked, asked,
                  false);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc: {
      const auto& params = params_of<cuMemAlloc_legacy_params>(call);
      if (params.dptr != nullptr)
        allocated(call, *params.dptr, params.bytesize, params.bytesize, false);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& params = params_of<cuMemAllocManaged_params>(call);
      if (params.dptr != nullptr)
        allocated(call, *params.dptr, params.bytesize, params.bytesize, true);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      freeing(call, params_of<cuMemFree_v2_params>(call).dptr);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      freeing(call, params_of<cuMemFreeAsync_params>(call).dptr, true);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
      freeing(call, params_of<cuMemFree_legacy_params>(call).dptr);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
      vmm_created(call, params_of<cuMemCreate_params>(call));
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      if (!at_exit(call)) return vmm::releasing(params_of<cuMemRelease_params>(call).handle);
      return vmm::released(succeeded(call));
    case CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle: {
      const auto& params = params_of<cuMemRetainAllocationHandle_params>(call);
      if (succeeded_exit(call) && params.handle != nullptr) vmm::retained(*params.handle);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& params = params_of<cuMemMap_params>(call);
      if (succeeded_exit(call)) vmm::mapped(params.ptr, params.size, params.handle);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto& params = params_of<cuMemUnmap_params>(call);
      if (!at_exit(call)) return vmm::unmapping(params.ptr, params.size);
      return vmm::unmapped(succeeded(call));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo:
      if (succeeded_exit(call)) footprint::refresh_pools(-1);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy:
      if (succeeded_exit(call))
        footprint::pool_destroyed(params_of<cuMemPoolDestroy_params>(call).pool);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool:
      if (succeeded_exit(call))
        footprint::current_pool_changed(params_of<cuDeviceSetMemPool_params>(call).dev);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      if (at_exit(call)) footprint::synchronized();
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphUpload:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      if (at_exit(call)) footprint::refresh_graphs(event_device(call));
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim:
      if (at_exit(call))
        footprint::refresh_graphs(params_of<cuDeviceGraphMemTrim_params>(call).device);
      return;
    default:
      return;
  }
}

}  // namespace

AddressMap& traced_addresses() noexcept {
  static AddressMap* const map = new AddressMap;
  return *map;
}

// Leaves the in-flight state at the end of an EXIT callback, whatever it did, and tells the call
// observer (after the call's events) when the thread's outermost call ends.
struct InFlightExit {
  bool exiting;
  ~InFlightExit() {
    if (exiting && in_flight::leave()) detail::notify_call_observer(false);
  }
};

void account_exact(int device, std::int64_t delta, const attribution::BlockEvent* event) noexcept {
  Channel* target = channel(Stream::exact, device);
  if (target == nullptr || (delta == 0 && event == nullptr)) return;
  // A placed ledger's mirror hears the delta inside the channel's move (exact_ledger.hpp).
  if (attribution::active()) {
    attribution::record(*target, device, delta, event);
  } else if (delta != 0) {
    target->add(delta);
  }
}

void on_driver_call(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const void* data) noexcept {
  if (data == nullptr) return;
  try {
    switch (domain) {
      case CUPTI_CB_DOMAIN_DRIVER_API:
      case CUPTI_CB_DOMAIN_RUNTIME_API: {
        const auto& call = *static_cast<const CUpti_CallbackData*>(data);
        if (call.callbackSite == CUPTI_API_ENTER) {
          // Before the driver charges anything. Only the outermost call: a runtime call's driver
          // calls (their events) are inside its ENTER and EXIT, and bracketing them again would
          // move the observer's word twice more for nothing (`gpumem run`: two locked adds).
          if (in_flight::enter()) detail::notify_call_observer(true);
        }
        const InFlightExit leaving{call.callbackSite == CUPTI_API_EXIT};
        return domain == CUPTI_CB_DOMAIN_DRIVER_API ? dispatch(cbid, call) : on_runtime(cbid, call);
      }
      case CUPTI_CB_DOMAIN_RESOURCE:
        return on_resource(cbid, *static_cast<const CUpti_ResourceData*>(data));
      default:
        return;
    }
  } catch (...) {
    // Out of memory for the block map: that block goes unseen; the program must not die of it.
  }
}

}  // namespace gpumem::peak
