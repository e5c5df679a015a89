// CUPTI callbacks around simulated API calls. libcupti registers its dispatcher with libcuda
// through a sim-private hook; with no subscriber a call costs one atomic load.
#pragma once

#include <atomic>
#include <cstdint>

#include "driver/abi/cupti.hpp"

// cbdata: a CUpti_CallbackData for the API domains, a CUpti_ResourceData for the resource domain.
extern "C" {
using GpumemSimDispatch = void (*)(int domain, std::uint32_t cbid, const void* cbdata);
}

namespace gpumem::sim::cuda {

std::uint32_t next_correlation_id();

// Calls `body` between the ENTER and EXIT callbacks, on the calling thread: functionParams points
// at `params`, functionReturnValue at the result, correlationData at one slot shared by both.
template <class Result, class Params, class Body>
Result around(GpumemSimDispatch dispatch, int domain, std::uint32_t cbid, const char* name,
              const Params& params, abi::CUcontext context, std::uint32_t context_uid,
              Body&& body) {
  std::uint64_t correlation_data = 0;
  Result result{};
  abi::CUpti_CallbackData data{};
  data.callbackSite = abi::CUPTI_API_ENTER;
  data.functionName = name;
  data.functionParams = &params;
  data.functionReturnValue = &result;
  data.symbolName = nullptr;
  data.context = context;
  data.contextUid = context_uid;
  data.correlationData = &correlation_data;
  data.correlationId = next_correlation_id();
  dispatch(domain, cbid, &data);
  result = body();
  abi::CUpti_CallbackData exit = data;
  exit.callbackSite = abi::CUPTI_API_EXIT;
  dispatch(domain, cbid, &exit);
  return result;
}

}  // namespace gpumem::sim::cuda
