// The CUPTI callback behind the exact source, and the blocks it has seen.
#pragma once

#include "driver/abi/cupti.hpp"
#include "peak/address_map.hpp"

namespace gpumem::peak {

void on_driver_call(void* userdata, abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid,
                    const void* data) noexcept;

namespace attribution {
struct BlockEvent;
}

// The one way the exact source moves a device's level (the process footprint): its channel, and
// the event observer; in attribution mode, under the device's recorder with `event`'s change to
// its live blocks (nullptr: a change no block names).
void account_exact(int device, std::int64_t delta,
                   const attribution::BlockEvent* event = nullptr) noexcept;

// The driver-domain callbacks the exact source enables: every call that allocates or frees
// device memory, maps or unmaps it, or can change what pools and graphs reserve.
inline constexpr abi::CUpti_CallbackId kTracedCalls[] = {
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemFree,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo,
    abi::CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy,
    abi::CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool,
    abi::CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    abi::CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    abi::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    abi::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphUpload,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
    abi::CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
    abi::CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim,
};
// The runtime-domain callbacks: counted only where no driver callback saw the same call.
inline constexpr abi::CUpti_CallbackId kTracedRuntimeCalls[] = {
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    abi::CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
};
inline constexpr abi::CUpti_CallbackId kTracedResources[] = {
    abi::CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
    abi::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
    abi::CUPTI_CBID_RESOURCE_MODULE_LOADED,
    abi::CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
};

// Live plain blocks by device address (VMM: vmm_tracker.hpp; pools: footprint.hpp).
AddressMap& traced_addresses() noexcept;

}  // namespace gpumem::peak
