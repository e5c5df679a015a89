// libgpumem_inject.so: loaded by the CUDA driver into every CUDA process of a command measured by
// `gpumem run` (CUDA_INJECTION64_PATH), it adds each device-memory event the exact source sees to
// the counters shared with the monitor, under the physical device's UUID: the process's own
// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER do not matter.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpumem/internal/device_uuid.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_source.hpp"
#include "gpumem/internal/run_attribution.hpp"
#include "gpumem/internal/run_counters.hpp"

namespace {

using gpumem::run::ProcessSlot;
using gpumem::run::RunCounters;

RunCounters* g_counters = nullptr;
std::atomic<ProcessSlot*> g_slot{nullptr};

// CUDA ordinal -> device slot in the shared file, resolved on the ordinal's first event: 0 not
// yet, slot + 1, or -1 when it cannot be (no UUID from the driver, every slot taken).
std::atomic<int> g_device_slots[gpumem::run::kMaxDevices];

void report_fallback(const std::string& reason);
void stop_counting(const std::string& reason);
void forget_attribution_in_child();

// The device's UUID from the driver (cuDeviceGetUuid_v2, else v1: NVML is never loaded here),
// and its slot in the file.
int resolve_device_slot(int ordinal, std::string& why) {
  const auto uuid = gpumem::driver::device_uuid(ordinal);
  if (!uuid) {
    why = "the driver gave no UUID for CUDA device " + std::to_string(ordinal);
    return -1;
  }
  const int slot = gpumem::run::counting_device(*g_counters, *uuid);
  if (slot < 0) {
    why = "more than " + std::to_string(gpumem::run::kMaxDevices) + " devices in one run";
  }
  return slot;
}

int device_slot(int ordinal) {
  const int known = g_device_slots[ordinal].load(std::memory_order_relaxed);
  if (known != 0) [[likely]]
    return known > 0 ? known - 1 : -1;
  std::string why;
  const int slot = resolve_device_slot(ordinal, why);
  g_device_slots[ordinal].store(slot >= 0 ? slot + 1 : -1, std::memory_order_relaxed);
  if (slot < 0) stop_counting(why);
  return slot;
}

void on_event(void*, int ordinal, std::int64_t delta_bytes) {
  // Events after this process gave its slot back (frees in static destructors at exit) were
  // already accounted for when it did.
  ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
  if (slot == nullptr || ordinal < 0 || ordinal >= gpumem::run::kMaxDevices) return;
  const int device = device_slot(ordinal);
  if (device < 0) return;
  // Release: a monitor that reads this sees the call's ENTER in `calls` too (docs/peaks.md).
  slot->held[device].fetch_add(delta_bytes, std::memory_order_release);
  gpumem::run::add_event(*g_counters, device, delta_bytes);
}

// Every outermost traced call's ENTER and EXIT, in the slot's `calls` (run_counters.hpp): the
// monitor reconciles NVML's figure for this process only from a reading no call overlapped. An EXIT
// after the slot was given back (at exit) has nothing to balance: the slot's next owner starts
// afresh.
void on_call(void*, bool entering) {
  ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
  if (slot == nullptr) return;
  slot->calls.fetch_add(entering ? gpumem::run::kCallEntered : gpumem::run::kCallLeft,
                        std::memory_order_seq_cst);
}

ProcessSlot* claim_slot() {
  const std::int32_t pid = ::getpid();
  // A fork child or an exec in a new pid namespace is another process with maybe the same pid.
  const std::uint64_t pid_namespace = gpumem::run::own_pid_namespace();
  const std::size_t used = gpumem::run::process_slots_used(*g_counters);
  for (std::size_t index = 0; index < used; ++index) {
    ProcessSlot& slot = g_counters->processes[index];
    if (slot.pid.load(std::memory_order_relaxed) == pid &&
        slot.pid_namespace.load(std::memory_order_relaxed) == pid_namespace) {
      // Our image before an exec: what it held moves outside any call, and a call of it may
      // have been in flight.
      slot.calls.fetch_add(gpumem::run::kCallEntered, std::memory_order_seq_cst);
      gpumem::run::give_back(*g_counters, slot);
      slot.claimed_ns.store(gpumem::run::monotonic_ns(), std::memory_order_relaxed);
      slot.released_ns.store(0, std::memory_order_relaxed);
      gpumem::run::reset_calls(slot);
      return &slot;
    }
  }
  for (ProcessSlot& slot : g_counters->processes) {
    std::int32_t expected = 0;
    if (slot.pid.compare_exchange_strong(expected, pid, std::memory_order_acq_rel)) {
      gpumem::run::note_process_slot(*g_counters, static_cast<int>(&slot - g_counters->processes));
      // An event racing its previous owner's exit may have left bytes here: they are not ours.
      gpumem::run::give_back(*g_counters, slot);
      slot.claimed_ns.store(gpumem::run::monotonic_ns(), std::memory_order_relaxed);
      slot.released_ns.store(0, std::memory_order_relaxed);
      gpumem::run::reset_calls(slot);
      slot.pid_namespace.store(pid_namespace, std::memory_order_release);
      return &slot;
    }
  }
  g_counters->slots_exhausted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void release_slot() {
  ProcessSlot* slot = g_slot.exchange(nullptr, std::memory_order_acq_rel);
  if (slot == nullptr) return;
  // Given back while the driver still shows our memory: no reading of the slot from now on may
  // pass for one no call overlapped (a call that never leaves; the next owner resets it).
  slot->calls.fetch_add(gpumem::run::kCallEntered, std::memory_order_seq_cst);
  slot->released_ns.store(gpumem::run::monotonic_ns(), std::memory_order_release);
  gpumem::run::give_back(*g_counters, *slot);
  slot->pid_namespace.store(0, std::memory_order_relaxed);
  std::int32_t pid = ::getpid();
  slot->pid.compare_exchange_strong(pid, 0, std::memory_order_acq_rel);
}

// An event this process cannot count: what it counted is taken back and the monitor samples it
// instead, so nothing is counted twice or half.
void stop_counting(const std::string& reason) {
  if (g_slot.load(std::memory_order_acquire) == nullptr) return;
  release_slot();
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), gpumem::run::own_pid_namespace(),
                             gpumem::run::kAttachedLost, reason);
}

void report_fallback(const std::string& reason) {
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), gpumem::run::own_pid_namespace(),
                             gpumem::run::kAttachedFallback, reason);
  std::int32_t unclaimed = 0;
  if (g_counters->reason_claimed.compare_exchange_strong(unclaimed, 1)) {
    const std::string text = "process " + std::to_string(::getpid()) + ": " + reason;
    std::strncpy(g_counters->fallback_reason, text.c_str(),
                 sizeof(g_counters->fallback_reason) - 1);
  }
}

// A forked child starts with no device memory of its own, and counts under its own pid.
void after_fork_in_child() {
  forget_attribution_in_child();
  if (g_slot.load(std::memory_order_relaxed) == nullptr) return;
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    g_slot.store(nullptr, std::memory_order_release);
    report_fallback("too many CUDA processes to count");
    return;
  }
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), gpumem::run::own_pid_namespace(),
                             gpumem::run::kAttachedExact, {});
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

// `gpumem run --attribute/--html` names a directory: each process writes its out-of-memory
// document there as it fails (the engine, GPUMEM_OOM_REPORT) and its peaks at exit.
std::string attribution_file(const char* what) {
  const char* dir = std::getenv(gpumem::run::kAttributionDirVariable);
  if (dir == nullptr || *dir == '\0') return {};
  // Named as the process names itself (its pid and pid namespace), so the run can tell which
  // of NVML's processes wrote it.
  return std::string(dir) + "/" + what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(gpumem::run::own_pid_namespace()) + ".json";
}

// The process that started attribution: a forked child inherits its recorder's blocks and peak,
// which are not the child's, so it records nothing (an exec starts afresh).
std::atomic<int> g_attribution_pid{0};

void point_oom_report() {
  const std::string path = attribution_file("oom");
  if (!path.empty()) ::setenv("GPUMEM_OOM_REPORT", path.c_str(), 1);
}

void forget_attribution_in_child() {
  if (g_attribution_pid.load(std::memory_order_relaxed) == 0) return;
  ::unsetenv("GPUMEM_OOM_REPORT");
}

void write_attribution_peaks() {
  try {
    if (g_attribution_pid.load(std::memory_order_relaxed) != ::getpid()) return;
    const std::string path = attribution_file("peak");
    if (path.empty()) return;
    const auto peaks = gpumem::detail::run_attribution_peaks();
    if (peaks.empty()) return;
    const std::string text = gpumem::attribution_json(peaks);
    const std::string partial = path + ".partial";
    std::FILE* file = std::fopen(partial.c_str(), "w");
    if (file == nullptr) return;
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    if (std::fclose(file) == 0 && written) std::rename(partial.c_str(), path.c_str());
  } catch (...) {
    // Out of host memory at exit: the run reports the process without attribution.
  }
}

void start_attribution() {
  if (attribution_file("peak").empty()) return;
  point_oom_report();
  g_attribution_pid.store(::getpid(), std::memory_order_relaxed);
  if (gpumem::detail::start_run_attribution(gpumem::run::kMaxDevices)) {
    std::atexit(write_attribution_peaks);
  }
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
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    report_fallback("too many CUDA processes to count");
    return 1;
  }
  g_slot.store(slot, std::memory_order_release);
  gpumem::detail::set_event_observer(on_event, nullptr);
  gpumem::detail::set_call_observer(on_call, nullptr);
  // No NVML in a measured process: the monitor reconciles contexts from its own samples.
  gpumem::detail::set_footprint_reconciliation(false);
  if (!start_exact_source()) {
    gpumem::detail::set_event_observer(nullptr, nullptr);
    gpumem::detail::set_call_observer(nullptr, nullptr);
    release_slot();
    return 1;
  }
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  gpumem::run::record_attach(*g_counters, ::getpid(), gpumem::run::own_pid_namespace(),
                             gpumem::run::kAttachedExact, {});
  ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
  std::atexit(release_slot);
  start_attribution();
  return 1;
}
