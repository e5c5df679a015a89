// Process-wide taps on the exact source: every traced call's ENTER and EXIT (the `gpumem run`
// injection library publishes them next to the process's ledger, exact_ledger.hpp), and whether
// it reconciles against NVML.
#pragma once

#include <cstdint>

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::detail {

// Called on the calling thread at the ENTER (`entering` true) and after the EXIT (false) of every
// outermost driver or runtime call the exact source traces, while the CUPTI subscription is held:
// the events of a call come between the two. Balanced per thread: an EXIT whose
// ENTER was not seen (a subscription taken mid-call) is not reported. A call nested in another
// traced call of the same thread (the driver calls inside a runtime call) is not reported: its
// events come between the outer call's ENTER and EXIT already. The `gpumem run` injection library
// publishes them so that the monitor can tell an NVML reading taken while the driver's figures
// and the events differ (a call in flight) from one it can reconcile. Must be cheap and
// must not call CUDA; nullptr removes it. Unset, the cost is one relaxed atomic load per call.
// Replacing an observer while calls are in flight is safe, but a call that already loaded the old
// one may still call it once afterwards.
using CallObserver = void (*)(void* ctx, bool entering);
void set_call_observer(CallObserver fn, void* ctx) noexcept;

// Called on the thread whose call created a CUDA context, at CUPTI's CONTEXT_CREATED (inside
// that call, the context's memory already charged), while the CUPTI subscription is held. The
// `gpumem run` injection library asks the monitor for a reading of the process's footprint at
// its next quiet moment (docs/peaks.md, "How the context is known"). Must be cheap and must not
// call CUDA; nullptr removes it.
using ContextObserver = void (*)(void* ctx);
void set_context_observer(ContextObserver fn, void* ctx) noexcept;

// Whether the exact source asks NVML for this process's own figure to reconcile the footprint
// (the context, modules, the driver's rounding). On by default. The `gpumem run` injection
// library turns it off before it subscribes: NVML's start-up would cost every CUDA process of a
// job tens of milliseconds inside cuInit, and the monitor, which samples NVML per process
// anyway, covers the context instead (a run's peak is never below NVML's per-process figure).
void set_footprint_reconciliation(bool enabled) noexcept;

}  // namespace gpumem::detail
