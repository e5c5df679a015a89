// The simulated CUPTI callback API: one subscriber per process, per-domain and per-cbid enables,
// and a dispatcher that libcuda (and libcudart through it) call on the API-calling thread.
#include <array>
#include <atomic>

#include "core/export.hpp"
#include "core/faults.hpp"
#include "cuda/trace.hpp"

using namespace gpumem::abi;

extern "C" void gpumemSimSetCallbackDispatcher(GpumemSimDispatch dispatch);

struct gpumem::abi::CUpti_Subscriber_st {
  static constexpr int kDomains = 4;
  static constexpr std::uint32_t kCallbackIds = 1024;

  std::atomic<bool> active{false};
  std::atomic<CUpti_CallbackFunc> callback{nullptr};
  std::atomic<void*> userdata{nullptr};
  std::array<std::array<std::atomic<bool>, kCallbackIds>, kDomains> enabled{};
};

namespace {

// A single static subscriber: a dispatcher racing with cuptiUnsubscribe only ever sees a valid
// object, at worst inactive.
CUpti_Subscriber_st g_subscriber;
std::atomic<bool> g_claimed{
    false};  // taken before the subscriber is set up, so races have one winner

void dispatch(int domain, std::uint32_t cbid, const void* data) {
  CUpti_Subscriber_st& s = g_subscriber;
  if (!s.active.load(std::memory_order_acquire)) return;
  if (domain <= 0 || domain >= CUpti_Subscriber_st::kDomains ||
      cbid >= CUpti_Subscriber_st::kCallbackIds)
    return;
  if (!s.enabled[static_cast<std::size_t>(domain)][cbid].load(std::memory_order_relaxed)) return;
  if (CUpti_CallbackFunc callback = s.callback.load(std::memory_order_acquire)) {
    callback(s.userdata.load(std::memory_order_relaxed), domain, cbid, data);
  }
}

bool api_domain(CUpti_CallbackDomain domain) {
  return domain > 0 && domain < CUpti_Subscriber_st::kDomains;
}

}  // namespace

GPUMEM_SIM_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                             CUpti_CallbackFunc callback, void* userdata) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (gpumem::sim::faults().cupti_busy) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  bool expected = false;
  if (!g_claimed.compare_exchange_strong(expected, true))
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  for (auto& domain : g_subscriber.enabled) {
    for (auto& flag : domain) flag.store(false, std::memory_order_relaxed);
  }
  g_subscriber.callback.store(callback, std::memory_order_release);
  g_subscriber.userdata.store(userdata, std::memory_order_release);
  g_subscriber.active.store(true, std::memory_order_release);
  gpumemSimSetCallbackDispatcher(dispatch);
  *subscriber = &g_subscriber;
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  if (subscriber != &g_subscriber || !g_subscriber.active.load())
    return CUPTI_ERROR_INVALID_PARAMETER;
  gpumemSimSetCallbackDispatcher(nullptr);
  g_subscriber.active.store(false, std::memory_order_release);
  g_claimed.store(false, std::memory_order_release);
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiEnableCallback(std::uint32_t enable,
                                                  CUpti_SubscriberHandle subscriber,
                                                  CUpti_CallbackDomain domain,
                                                  CUpti_CallbackId cbid) {
  if (subscriber != &g_subscriber || !g_subscriber.active.load())
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (!api_domain(domain) || cbid >= CUpti_Subscriber_st::kCallbackIds)
    return CUPTI_ERROR_INVALID_PARAMETER;
  g_subscriber.enabled[static_cast<std::size_t>(domain)][cbid].store(enable != 0,
                                                                     std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiEnableDomain(std::uint32_t enable,
                                                CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain) {
  if (subscriber != &g_subscriber || !g_subscriber.active.load())
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (!api_domain(domain)) return CUPTI_ERROR_INVALID_PARAMETER;
  for (auto& flag : g_subscriber.enabled[static_cast<std::size_t>(domain)]) {
    flag.store(enable != 0, std::memory_order_relaxed);
  }
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiEnableAllDomains(std::uint32_t enable,
                                                    CUpti_SubscriberHandle subscriber) {
  for (int domain = 1; domain < CUpti_Subscriber_st::kDomains; ++domain) {
    if (const CUptiResult rc = cuptiEnableDomain(enable, subscriber, domain)) return rc;
  }
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiGetVersion(std::uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = 130000;
  return CUPTI_SUCCESS;
}

GPUMEM_SIM_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  if (text == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *text = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *text = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *text = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      *text = "CUPTI_ERROR_NOT_INITIALIZED";
      break;
    case CUPTI_ERROR_NOT_SUPPORTED:
      *text = "CUPTI_ERROR_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      *text = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_UNKNOWN:
      *text = "CUPTI_ERROR_UNKNOWN";
      break;
    default:
      *text = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}
