// libgpumem_inject.so: loaded by the CUDA driver into every CUDA process of a command measured by
// `gpumem run` (CUDA_INJECTION64_PATH), it adds each device-memory event the exact source sees to
// the counters shared with the monitor.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_source.hpp"
#include "run_counters.hpp"

namespace {

using gpumem::run::ProcessSlot;
using gpumem::run::RunCounters;

RunCounters* g_counters = nullptr;
std::atomic<ProcessSlot*> g_slot{nullptr};

void on_event(void*, int device, std::int64_t delta_bytes) {
  // Events after this process gave its slot back (frees in static destructors at exit) were
  // already accounted for when it did.
  ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
  if (slot == nullptr || device < 0 || device >= gpumem::run::kMaxDevices) return;
  slot->held[device].fetch_add(delta_bytes, std::memory_order_relaxed);
  gpumem::run::add_event(g_counters->devices[device], delta_bytes);
}

ProcessSlot* claim_slot() {
  const std::int32_t pid = ::getpid();
  for (ProcessSlot& slot : g_counters->processes) {
    if (slot.pid.load(std::memory_order_relaxed) == pid) {  // our image before an exec
      gpumem::run::give_back(*g_counters, slot);
      return &slot;
    }
  }
  for (ProcessSlot& slot : g_counters->processes) {
    std::int32_t expected = 0;
    if (slot.pid.compare_exchange_strong(expected, pid, std::memory_order_acq_rel)) {
      // An event racing its previous owner's exit may have left bytes here: they are not ours.
      gpumem::run::give_back(*g_counters, slot);
      return &slot;
    }
  }
  g_counters->slots_exhausted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void release_slot() {
  ProcessSlot* slot = g_slot.exchange(nullptr, std::memory_order_acq_rel);
  if (slot == nullptr) return;
  gpumem::run::give_back(*g_counters, *slot);
  std::int32_t pid = ::getpid();
  slot->pid.compare_exchange_strong(pid, 0, std::memory_order_acq_rel);
}

void report_fallback(const std::string& reason) {
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), false, reason);
  std::int32_t unclaimed = 0;
  if (g_counters->reason_claimed.compare_exchange_strong(unclaimed, 1)) {
    const std::string text = "process " + std::to_string(::getpid()) + ": " + reason;
    std::strncpy(g_counters->fallback_reason, text.c_str(),
                 sizeof(g_counters->fallback_reason) - 1);
  }
}

// A forked child starts with no device memory of its own, and counts under its own pid.
void after_fork_in_child() {
  if (g_slot.load(std::memory_order_relaxed) == nullptr) return;
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    g_slot.store(nullptr, std::memory_order_release);
    report_fallback("too many CUDA processes to count");
    return;
  }
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), true, {});
  g_slot.store(slot, std::memory_order_release);
}

// Takes the CUPTI subscription, which delivers every device's events, for the life of the
// process (never released: callbacks may still arrive while static destructors run). Directly,
// not through a PeakCounter: that would resolve the device through NVML.
bool start_exact_source() {
  if (gpumem::peak::acquire_exact()) return true;
  const std::string why = gpumem::peak::exact_status();
  report_fallback(why.empty() ? "the exact source is unavailable" : why);
  return false;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> initialized{false};
  if (initialized.exchange(true)) return 1;
  const char* path = std::getenv(gpumem::run::kCountersVariable);
  if (path == nullptr || *path == '\0') return 1;  // not under `gpumem run`: stay out of the way
  g_counters = gpumem::run::map_run_counters(path, /*create=*/false, nullptr);
  if (g_counters == nullptr) return 1;
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);

  if (const std::string mismatch = gpumem::run::device_view_mismatch(*g_counters);
      !mismatch.empty()) {
    report_fallback(mismatch);
    return 1;
  }
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    report_fallback("too many CUDA processes to count");
    return 1;
  }
  g_slot.store(slot, std::memory_order_release);
  gpumem::detail::set_event_observer(on_event, nullptr);
  // No NVML in a measured process: the monitor reconciles contexts from its own samples.
  gpumem::detail::set_footprint_reconciliation(false);
  if (!start_exact_source()) {
    gpumem::detail::set_event_observer(nullptr, nullptr);
    release_slot();
    return 1;
  }
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), true, {});
  ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
  std::atexit(release_slot);
  return 1;
}
