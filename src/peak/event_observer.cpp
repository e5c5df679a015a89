#include "gpumem/internal/event_observer.hpp"

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "peak/event_observer_call.hpp"

namespace gpumem::detail {
namespace {

struct Observer {
  EventObserver fn;
  void* ctx;
};

// One pointer, so that the function and its context always change together. Replaced observers
// are never freed: an event may still be calling one.
std::atomic<const Observer*> current_observer{nullptr};

}  // namespace

void set_event_observer(EventObserver fn, void* ctx) noexcept {
  static std::mutex setting;
  // Kept reachable (and never freed): an event may still be calling a replaced observer.
  static auto* const retired = new std::vector<const Observer*>;
  const std::lock_guard lock(setting);
  const Observer* next = fn == nullptr ? nullptr : new (std::nothrow) Observer{fn, ctx};
  const Observer* previous = current_observer.exchange(next, std::memory_order_acq_rel);
  if (previous != nullptr) {
    try {
      retired->push_back(previous);
    } catch (...) {
      // Out of memory: the old observer stays allocated and unreachable, which is harmless.
    }
  }
}

void notify_event_observer(int device, std::int64_t delta_bytes) noexcept {
  if (const Observer* observer = current_observer.load(std::memory_order_acquire)) {
    observer->fn(observer->ctx, device, delta_bytes);
  }
}

}  // namespace gpumem::detail
