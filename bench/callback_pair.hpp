// A cuMemAlloc_v2 and its cuMemFree_v2 fed to the exact source's CUPTI callback as the driver
// calls it (three callbacks: alloc EXIT, free ENTER, free EXIT): the per-event benchmarks' unit.
#pragma once

#include <cstdint>

#include "driver/abi/cupti.hpp"
#include "peak/exact_callbacks.hpp"

namespace gpumem::bench {

// One 4096-byte allocation at `at` and its free; each call makes the pair again.
struct CallbackPair {
  abi::CUdeviceptr address;
  abi::cuMemAlloc_v2_params alloc{&address, 4096};
  abi::cuMemFree_v2_params release{};
  abi::CUresult ok = abi::CUDA_SUCCESS;
  std::uint64_t correlation = 0;
  abi::CUpti_CallbackData call{};
  explicit CallbackPair(abi::CUdeviceptr at) : address(at) {
    release.dptr = at;
    call.functionReturnValue = &ok;
    call.correlationData = &correlation;
    call.contextUid = 1;
  }
  void operator()() {
    call.callbackSite = abi::CUPTI_API_EXIT;
    call.functionParams = &alloc;
    peak::on_driver_call(nullptr, abi::CUPTI_CB_DOMAIN_DRIVER_API,
                         abi::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &call);
    call.callbackSite = abi::CUPTI_API_ENTER;
    call.functionParams = &release;
    peak::on_driver_call(nullptr, abi::CUPTI_CB_DOMAIN_DRIVER_API,
                         abi::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &call);
    call.callbackSite = abi::CUPTI_API_EXIT;
    peak::on_driver_call(nullptr, abi::CUPTI_CB_DOMAIN_DRIVER_API,
                         abi::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &call);
  }
};

}  // namespace gpumem::bench
