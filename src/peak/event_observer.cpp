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

struct CallWatcher {
  CallObserver fn;
  void* ctx;
};

std::atomic<const CallWatcher*> current_call_observer{nullptr};

// Replaces `current` with a new entry (nullptr for none); the old one is kept reachable, never
// freed: a call may still be calling it.
template <class Entry>
void replace(std::atomic<const Entry*>& current, const Entry* next) noexcept {
  static std::mutex setting;
  static auto* const retired = new std::vector<const void*>;
  const std::lock_guard lock(setting);
  const Entry* previous = current.exchange(next, std::memory_order_acq_rel);
  if (previous != nullptr) {
    try {
      retired->push_back(previous);
    } catch (...) {
      // Out of memory: the old observer stays allocated and unreachable, which is harmless.
    }
  }
}

}  // namespace

void set_event_observer(EventObserver fn, void* ctx) noexcept {
  replace(current_observer, fn == nullptr ? nullptr : new (std::nothrow) Observer{fn, ctx});
}

void set_call_observer(CallObserver fn, void* ctx) noexcept {
  replace(current_call_observer, fn == nullptr ? nullptr : new (std::nothrow) CallWatcher{fn, ctx});
}

void notify_event_observer(int device, std::int64_t delta_bytes) noexcept {
  if (const Observer* observer = current_observer.load(std::memory_order_acquire)) {
    observer->fn(observer->ctx, device, delta_bytes);
  }
}

void notify_call_observer(bool entering) noexcept {
  if (const CallWatcher* observer = current_call_observer.load(std::memory_order_acquire)) {
    observer->fn(observer->ctx, entering);
  }
}

}  // namespace gpumem::detail
