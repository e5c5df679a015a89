#include "gpumem/internal/event_observer.hpp"

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "peak/event_observer_call.hpp"

namespace gpumem::detail {

std::atomic<const CallWatcher*> g_call_observer{nullptr};
std::atomic<const ContextWatcher*> g_context_observer{nullptr};

namespace {

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

void set_call_observer(CallObserver fn, void* ctx) noexcept {
  replace(g_call_observer, fn == nullptr ? nullptr : new (std::nothrow) CallWatcher{fn, ctx});
}

void set_context_observer(ContextObserver fn, void* ctx) noexcept {
  replace(g_context_observer, fn == nullptr ? nullptr : new (std::nothrow) ContextWatcher{fn, ctx});
}

}  // namespace gpumem::detail
