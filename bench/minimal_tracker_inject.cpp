// A minimal exact tracker as a CUDA injection library (CUDA_INJECTION64_PATH): a CUPTI subscriber
// with a mutex and an unordered_map per event, the level and peak beside them. The baseline that
// bench/run_event_cost_process.py sets a process under `gpumem run` against; the same tracker as
// run_event_cost.cpp's, loaded the way `gpumem run` loads its own library.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "driver/abi/cupti.hpp"

namespace {

using namespace gpumem::abi;

std::mutex g_mutex;
std::unordered_map<CUdeviceptr, std::size_t>* g_blocks = nullptr;  // never freed: exit may call
std::int64_t g_level = 0;
std::int64_t g_peak = 0;

void callback(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  const auto& call = *static_cast<const CUpti_CallbackData*>(data);
  if (call.callbackSite != CUPTI_API_EXIT ||
      *static_cast<const CUresult*>(call.functionReturnValue) != CUDA_SUCCESS)
    return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
    const auto& params = *static_cast<const cuMemAlloc_v2_params*>(call.functionParams);
    const std::lock_guard lock(g_mutex);
    (*g_blocks)[*params.dptr] = params.bytesize;
    g_level += static_cast<std::int64_t>(params.bytesize);
    g_peak = std::max(g_peak, g_level);
  } else {
    const auto& params = *static_cast<const cuMemFree_v2_params*>(call.functionParams);
    const std::lock_guard lock(g_mutex);
    if (const auto found = g_blocks->find(params.dptr); found != g_blocks->end()) {
      g_level -= static_cast<std::int64_t>(found->second);
      g_blocks->erase(found);
    }
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("GPUMEM_CUPTI_LIBRARY");
  void* cupti = ::dlopen(path != nullptr ? path : "libcupti.so", RTLD_NOW | RTLD_LOCAL);
  if (cupti == nullptr) return 0;
  auto subscribe = reinterpret_cast<PFN_cuptiSubscribe>(::dlsym(cupti, "cuptiSubscribe"));
  auto enable = reinterpret_cast<PFN_cuptiEnableCallback>(::dlsym(cupti, "cuptiEnableCallback"));
  CUpti_SubscriberHandle handle = nullptr;
  if (subscribe == nullptr || enable == nullptr ||
      subscribe(&handle, &callback, nullptr) != CUPTI_SUCCESS)
    return 0;
  g_blocks = new std::unordered_map<CUdeviceptr, std::size_t>;
  enable(1, handle, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  enable(1, handle, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
  return 1;
}
