// The exact source's side of event_observer.hpp: inline, because every traced call asks, and
// with no observer set (a plain trace) the asking should cost one load.
#pragma once

#include <atomic>
#include <cstdint>

#include "gpumem/internal/event_observer.hpp"

namespace gpumem::detail {

struct CallWatcher {
  CallObserver fn;
  void* ctx;
};

// One pointer, so that a function and its context always change together. Replaced ones
// are never freed: a call may still be calling one (event_observer.cpp).
extern std::atomic<const CallWatcher*> g_call_observer;

struct ContextWatcher {
  ContextObserver fn;
  void* ctx;
};
extern std::atomic<const ContextWatcher*> g_context_observer;

// Calls the context observer, if one is set.
inline void notify_context_observer() noexcept {
  if (const ContextWatcher* observer = g_context_observer.load(std::memory_order_acquire)) {
    observer->fn(observer->ctx);
  }
}

// Calls the call observer, if one is set.
inline void notify_call_observer(bool entering) noexcept {
  if (const CallWatcher* observer = g_call_observer.load(std::memory_order_acquire)) {
    observer->fn(observer->ctx, entering);
  }
}

}  // namespace gpumem::detail
