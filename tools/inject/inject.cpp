// libgpumem_inject.so: loaded by the CUDA driver into every CUDA process of a command measured by
// `gpumem run` (CUDA_INJECTION64_PATH), it adds each device-memory event the exact source sees to
// the counters shared with the monitor.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "gpumem/memory.hpp"
#include "gpumem/peak.hpp"
#include "peak/event_observer.hpp"
#include "run_counters.hpp"

namespace {

using gpumem::run::ProcessSlot;
using gpumem::run::RunCounters;

RunCounters* g_counters = nullptr;
std::atomic<ProcessSlot*> g_slot{nullptr};

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void on_event(void*, int device, std::int64_t delta_bytes) {
  // Events after this process gave its slot back (frees in static destructors at exit) were
  // already accounted for when it did.
  ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
  if (slot == nullptr || device < 0 || device >= gpumem::run::kMaxDevices) return;
  slot->held[device].fetch_add(delta_bytes, std::memory_order_relaxed);
  gpumem::run::add_event(g_counters->devices[device], delta_bytes, monotonic_ns);
}

// What a slot still holds leaves the tree's level: the driver frees a process's memory when it
// exits (or when an exec replaces its image).
void give_back(ProcessSlot& slot) {
  for (int device = 0; device < gpumem::run::kMaxDevices; ++device) {
    const std::int64_t held = slot.held[device].exchange(0, std::memory_order_relaxed);
    if (held != 0) g_counters->devices[device].current.fetch_sub(held, std::memory_order_relaxed);
  }
}

ProcessSlot* claim_slot() {
  const std::int32_t pid = ::getpid();
  for (ProcessSlot& slot : g_counters->processes) {
    if (slot.pid.load(std::memory_order_relaxed) == pid) {  // our image before an exec
      give_back(slot);
      return &slot;
    }
  }
  for (ProcessSlot& slot : g_counters->processes) {
    std::int32_t expected = 0;
    if (slot.pid.compare_exchange_strong(expected, pid, std::memory_order_acq_rel)) return &slot;
  }
  g_counters->slots_exhausted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void release_slot() {
  ProcessSlot* slot = g_slot.exchange(nullptr, std::memory_order_acq_rel);
  if (slot == nullptr) return;
  give_back(*slot);
  std::int32_t pid = ::getpid();
  slot->pid.compare_exchange_strong(pid, 0, std::memory_order_acq_rel);
}

// A forked child starts with no device memory of its own, and counts under its own pid.
void after_fork_in_child() {
  if (g_slot.load(std::memory_order_relaxed) == nullptr) return;
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    g_slot.store(nullptr, std::memory_order_release);
    return;
  }
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  g_slot.store(slot, std::memory_order_release);
}

void report_fallback(const std::string& reason) {
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  std::int32_t unclaimed = 0;
  if (g_counters->reason_claimed.compare_exchange_strong(unclaimed, 1)) {
    const std::string text = "process " + std::to_string(::getpid()) + ": " + reason;
    std::strncpy(g_counters->fallback_reason, text.c_str(),
                 sizeof(g_counters->fallback_reason) - 1);
  }
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The ordinals this process sees must be the monitor's, or its events land on the wrong device.
std::string device_view_mismatch() {
  const std::string visible = env_or_empty("CUDA_VISIBLE_DEVICES");
  const std::string order = env_or_empty("CUDA_DEVICE_ORDER");
  if (visible != g_counters->visible_devices) {
    return "CUDA_VISIBLE_DEVICES changed to '" + visible + "'";
  }
  if (order != g_counters->device_order) return "CUDA_DEVICE_ORDER changed to '" + order + "'";
  return {};
}

// Holds the CUPTI subscription, which delivers every device's events, for the life of the
// process (never destroyed: callbacks may still arrive while static destructors run).
gpumem::PeakCounter* g_subscription = nullptr;

bool start_exact_source() {
  g_subscription = new gpumem::PeakCounter(gpumem::current_device, gpumem::Source::exact);
  if (g_subscription->source() == gpumem::Source::exact) return true;
  const std::string why = gpumem::exact_source_status();
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

  if (const std::string mismatch = device_view_mismatch(); !mismatch.empty()) {
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
  if (!start_exact_source()) {
    gpumem::detail::set_event_observer(nullptr, nullptr);
    release_slot();
    return 1;
  }
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
  std::atexit(release_slot);
  return 1;
}
