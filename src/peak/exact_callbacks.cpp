#include "peak/exact_callbacks.hpp"

#include <cstdint>

#include "driver/cuda.hpp"
#include "peak/channels.hpp"
#include "peak/event_observer_call.hpp"

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

// The CUDA ordinal of the calling thread's context, cached per thread for the last context seen:
// a thread allocates on the same context many times in a row.
int event_device(const CUpti_CallbackData& call) noexcept {
  thread_local std::uint32_t cached_uid = 0;
  thread_local int cached_device = -1;
  if (cached_device >= 0 && cached_uid == call.contextUid) return cached_device;
  CUdevice device = 0;
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.ctxGetDevice == nullptr || cuda.ctxGetDevice(&device) != CUDA_SUCCESS) return 0;
  cached_uid = call.contextUid;
  cached_device = device;
  return device;
}

bool succeeded(const CUpti_CallbackData& call) noexcept {
  return call.functionReturnValue != nullptr &&
         *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
}

void count(const Block& block, std::int64_t delta) noexcept {
  Channel* target = channel(block.managed ? Stream::managed : Stream::exact, block.device);
  if (target == nullptr) return;
  target->add(delta);
  if (!block.managed) detail::notify_event_observer(block.device, delta);
}

void allocated(const CUpti_CallbackData& call, std::uint64_t address, std::uint64_t size,
               bool managed) {
  if (call.callbackSite != CUPTI_API_EXIT || !succeeded(call) || size == 0) return;
  const Block block{size, event_device(call), managed};
  traced_addresses().insert(address, block);
  count(block, static_cast<std::int64_t>(size));
}

// EXIT of a free whose block was stashed at ENTER: counted if the free succeeded, else back in
// the map if it came from there.
void freed(const CUpti_CallbackData& call, AddressMap& map, std::uint64_t key) {
  const std::uint64_t stashed = *call.correlationData;
  if ((stashed & kStashValid) == 0) return;
  const Block block = unstash(stashed);
  if (succeeded(call)) {
    count(block, -static_cast<std::int64_t>(block.size));
  } else if ((stashed & kStashFromMap) != 0) {
    map.insert(key, block);
  }
}

void freeing(const CUpti_CallbackData& call, std::uint64_t address) {
  if (call.correlationData == nullptr) return;
  if (call.callbackSite != CUPTI_API_ENTER) return freed(call, traced_addresses(), address);
  *call.correlationData = 0;
  if (address == 0) return;
  if (const std::optional<Block> block = traced_addresses().erase(address)) {
    *call.correlationData = stash(*block, true);
    return;
  }
  // Allocated before tracing began: the driver still knows its size.
  const driver::Cuda& cuda = driver::cuda();
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuda.memGetAddressRange == nullptr ||
      cuda.memGetAddressRange(&base, &size, address) != CUDA_SUCCESS || base != address) {
    return;
  }
  *call.correlationData = stash(Block{size, event_device(call), false}, false);
}

void vmm_created(const CUpti_CallbackData& call, const cuMemCreate_params& params) {
  if (call.callbackSite != CUPTI_API_EXIT || !succeeded(call) || params.handle == nullptr ||
      params.prop == nullptr || params.prop->locationType != CU_MEM_LOCATION_TYPE_DEVICE) {
    return;
  }
  const Block block{params.size, params.prop->locationId, false};
  traced_handles().insert(*params.handle, block);
  count(block, static_cast<std::int64_t>(block.size));
}

void vmm_releasing(const CUpti_CallbackData& call, CUmemGenericAllocationHandle handle) {
  if (call.correlationData == nullptr) return;
  if (call.callbackSite != CUPTI_API_ENTER) return freed(call, traced_handles(), handle);
  // A handle created before tracing began cannot be sized: it is left out.
  const std::optional<Block> block = traced_handles().erase(handle);
  *call.correlationData = block ? stash(*block, true) : 0;
}

template <class Params>
const Params& params_of(const CUpti_CallbackData& call) {
  return *static_cast<const Params*>(call.functionParams);
}

void dispatch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
  if (call.functionParams == nullptr) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      // All four start {CUdeviceptr* dptr; size_t bytesize; ...}.
      const auto& params = params_of<cuMemAlloc_v2_params>(call);
      if (params.dptr != nullptr) allocated(call, *params.dptr, params.bytesize, false);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& params = params_of<cuMemAllocPitch_v2_params>(call);
      if (params.dptr != nullptr && params.pPitch != nullptr) {
        allocated(call, *params.dptr, *params.pPitch * params.Height, false);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc: {
      const auto& params = params_of<cuMemAlloc_legacy_params>(call);
      if (params.dptr != nullptr) allocated(call, *params.dptr, params.bytesize, false);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& params = params_of<cuMemAllocManaged_params>(call);
      if (params.dptr != nullptr) allocated(call, *params.dptr, params.bytesize, true);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      freeing(call, params_of<cuMemFree_v2_params>(call).dptr);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      freeing(call, params_of<cuMemFreeAsync_params>(call).dptr);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
      freeing(call, params_of<cuMemFree_legacy_params>(call).dptr);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
      vmm_created(call, params_of<cuMemCreate_params>(call));
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      vmm_releasing(call, params_of<cuMemRelease_params>(call).handle);
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

AddressMap& traced_handles() noexcept {
  static AddressMap* const map = new AddressMap;
  return *map;
}

void on_driver_call(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const void* data) noexcept {
  // Only the driver domain: a runtime cudaMalloc reaches the driver too, and counts there once.
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || data == nullptr) return;
  try {
    dispatch(cbid, *static_cast<const CUpti_CallbackData*>(data));
  } catch (...) {
    // Out of memory for the block map: that block goes unseen; the program must not die of it.
  }
}

}  // namespace gpumem::peak
