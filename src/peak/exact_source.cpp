#include "gpumem/internal/exact_source.hpp"

#include <mutex>

#include "driver/cupti.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/footprint.hpp"
#include "peak/in_flight.hpp"
#include "peak/vmm_tracker.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::peak {
namespace {

struct Subscription {
  std::mutex mutex;
  int references = 0;
  abi::CUpti_SubscriberHandle handle = nullptr;
  std::string status;
};

Subscription& subscription() noexcept {
  static Subscription* const instance = new Subscription;
  return *instance;
}

std::string refusal(abi::CUptiResult code) {
  if (code == abi::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    return "CUPTI is held by another tool (torch.profiler, Nsight or compute-sanitizer?): " +
           driver::cupti_error_text(code) + "; peaks are sampled from NVML instead";
  }
  return "CUPTI subscription failed: " + driver::cupti_error_text(code) +
         "; peaks are sampled from NVML instead";
}

// No exact counter is alive (the subscription has no references): nothing reads the levels.
void forget_everything() {
  traced_addresses().clear();
  in_flight::reset();
  vmm::clear();
  footprint::clear();
  for (int device = 0; device < kMaxDevices; ++device) {
    channel(Stream::exact, device)->set_level(0);
    channel(Stream::managed, device)->set_level(0);
  }
}

void unavailable(Subscription& state, std::string why) {
  if (why != state.status) support::record_diagnostic(why);
  state.status = std::move(why);
}

}  // namespace

bool acquire_exact() noexcept {
  try {
    Subscription& state = subscription();
    const std::lock_guard lock(state.mutex);
    if (state.references > 0) {
      ++state.references;
      return true;
    }
    const driver::Cupti& cupti = driver::cupti();
    if (!cupti.loaded) {
      unavailable(state, cupti.why);
      return false;
    }
    // Blocks seen during an earlier subscription may have been freed unseen since: start from
    // nothing; reconciliation brings each level up to what the driver holds.
    forget_everything();
    abi::CUpti_SubscriberHandle handle = nullptr;
    const abi::CUptiResult subscribed = cupti.subscribe(&handle, &on_driver_call, nullptr);
    if (subscribed != abi::CUPTI_SUCCESS) {
      // Another tool keeps its subscription untouched: nothing of ours was registered.
      unavailable(state, refusal(subscribed));
      return false;
    }
    int enabled = 0;
    for (const abi::CUpti_CallbackId cbid : kTracedCalls) {
      if (cupti.enableCallback(1, handle, abi::CUPTI_CB_DOMAIN_DRIVER_API, cbid) ==
          abi::CUPTI_SUCCESS) {
        ++enabled;
      }
    }
    // Without these the footprint still reconciles at every reading; with them, at once.
    for (const abi::CUpti_CallbackId cbid : kTracedRuntimeCalls) {
      cupti.enableCallback(1, handle, abi::CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    }
    for (const abi::CUpti_CallbackId cbid : kTracedResources) {
      cupti.enableCallback(1, handle, abi::CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
    if (enabled == 0) {
      cupti.unsubscribe(handle);
      unavailable(state,
                  "CUPTI refused every memory callback; peaks are sampled from NVML instead");
      return false;
    }
    state.handle = handle;
    state.references = 1;
    state.status.clear();
    return true;
  } catch (...) {
    return false;
  }
}

void release_exact() noexcept {
  Subscription& state = subscription();
  const std::lock_guard lock(state.mutex);
  if (state.references == 0 || --state.references > 0) return;
  driver::cupti().unsubscribe(state.handle);
  state.handle = nullptr;
  forget_everything();
}

std::string exact_status() {
  Subscription& state = subscription();
  const std::lock_guard lock(state.mutex);
  return state.status;
}

}  // namespace gpumem::peak
