// libcuda's side of the callback hook: driver calls wrap themselves in `traced`.
#pragma once

#include "process.hpp"
#include "trace.hpp"

namespace gpumem::sim::cuda {

extern std::atomic<GpumemSimDispatch> g_dispatch;

template <class Params, class Body>
CUresult traced(std::uint32_t cbid, const char* name, const Params& params, Body&& body) {
  const GpumemSimDispatch dispatch = g_dispatch.load(std::memory_order_acquire);
  if (dispatch == nullptr) return body();
  const CUcontext context = current_context();
  return around<CUresult>(dispatch, abi::CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, params, context,
                          context != nullptr ? context->uid.load() : 0, body);
}

}  // namespace gpumem::sim::cuda
