// The CUPTI callback behind the exact source, and the blocks it has seen.
#pragma once

#include "driver/abi/cupti.hpp"
#include "peak/address_map.hpp"

namespace gpumem::peak {

void on_driver_call(void* userdata, abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid,
                    const void* data) noexcept;

// The driver-domain callbacks the exact source enables.
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
};

// Live blocks by device address, and VMM allocations by handle.
AddressMap& traced_addresses() noexcept;
AddressMap& traced_handles() noexcept;

}  // namespace gpumem::peak
