// A CUDA injection library for the tests: counts InitializeInjection calls and, like gpumem's
// own injection, subscribes to CUPTI from inside it to count driver allocations.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include "driver/abi/cupti.hpp"

using namespace gpumem::abi;

extern "C" {
__attribute__((visibility("default"))) std::atomic<int> gpumem_sim_probe_calls{0};
__attribute__((visibility("default"))) std::atomic<int> gpumem_sim_probe_allocations{0};
}

namespace {

void count(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* raw) {
  const auto* data = static_cast<const CUpti_CallbackData*>(raw);
  if (data->callbackSite == CUPTI_API_EXIT &&
      *static_cast<const int*>(data->functionReturnValue) == 0) {
    ++gpumem_sim_probe_allocations;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  ++gpumem_sim_probe_calls;
  const char* path = std::getenv("GPUMEM_CUPTI_LIBRARY");
  void* cupti = path != nullptr ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (cupti == nullptr) return 0;
  auto subscribe = reinterpret_cast<PFN_cuptiSubscribe>(::dlsym(cupti, "cuptiSubscribe"));
  auto enable = reinterpret_cast<PFN_cuptiEnableCallback>(::dlsym(cupti, "cuptiEnableCallback"));
  CUpti_SubscriberHandle subscriber = nullptr;
  if (subscribe(&subscriber, count, nullptr) != CUPTI_SUCCESS) return 0;
  enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  return 1;
}
