#include "trace.hpp"

#include "core/export.hpp"
#include "trace_hook.hpp"

namespace gpumem::sim::cuda {

std::atomic<GpumemSimDispatch> g_dispatch{nullptr};

std::uint32_t next_correlation_id() {
  static std::atomic<std::uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gpumem::sim::cuda

// Sim-private: libcupti installs its dispatcher on subscribe and removes it on unsubscribe.
GPUMEM_SIM_EXPORT void gpumemSimSetCallbackDispatcher(GpumemSimDispatch dispatch) {
  gpumem::sim::cuda::g_dispatch.store(dispatch, std::memory_order_release);
}

// Sim-private: libcudart fires its runtime-domain callbacks through the same dispatcher.
GPUMEM_SIM_EXPORT GpumemSimDispatch gpumemSimCallbackDispatcher() {
  return gpumem::sim::cuda::g_dispatch.load(std::memory_order_acquire);
}
