// The measured side of `gpumem run`, in each CUDA process of the command (run_process.hpp): the
// process claims its slot in the counters file shared with the monitor, places the exact source's
// ledger there (exact_ledger.hpp) with a mirror that adds each event to the level of its physical
// device, named by UUID, before the ledger moves, and brackets its calls in the slot's `calls`.
// The process's own CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER do not matter. Each event moves
// the ledger once and the device's level once.
#include "gpumem/internal/run_process.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/device_uuid.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_ledger.hpp"
#include "gpumem/internal/exact_source.hpp"
#include "gpumem/internal/run_attribution.hpp"
#include "gpumem/internal/run_counters.hpp"

namespace gpumem::run::joined {
namespace {

RunCounters* g_counters = nullptr;
std::atomic<ProcessSlot*> g_slot{nullptr};

// CUDA ordinal -> device slot in the shared file, resolved on the ordinal's first event: 0 not
// yet, slot + 1, or -1 when it cannot be (no UUID from the driver, every slot taken). The slot's
// `ordinal_device` says the same for the monitor.
std::atomic<int> g_device_slots[detail::kLedgerOrdinals];

// Why an ordinal could not be counted, written once by the event that found out (g_stop_claimed)
// before g_stop_pending is set: the process stops counting after that call (stop_counting moves
// the ledger, which cannot be done inside an event).
std::atomic<bool> g_stop_claimed{false};
std::atomic<bool> g_stop_pending{false};
std::string g_stop_reason;

// Readings asked of the monitor (reading_request.cpp; docs/peaks.md, "How the context is
// known"). While one is taken the gate is shut: this process's threads wait before entering a
// traced call, so the calls in flight drain and none starts until the monitor has read NVML's
// figure for the process. A context created asks at the next end of an outermost call (the
// thread then in no call, the context charged); a process giving its slot back at exit asks
// once more. Every wait is bounded: a monitor that does not answer costs this much, once.
constexpr std::int64_t kAnswerTimeoutNs = 2'000'000'000;
constexpr int kMaxBusyAnswers = 8;  // a call that never ends in a reading's time: ask no more
std::atomic<std::uint32_t> g_gate{0};
std::atomic<bool> g_context_pending{false};
std::atomic<bool> g_had_context{false};
std::atomic<bool> g_monitor_silent{false};  // a request went unanswered: ask no more
std::atomic<int> g_busy_answers{0};

void report_fallback(const std::string& reason);
void stop_counting(const std::string& reason);
void forget_attribution_in_child();

// The device's UUID from the driver (cuDeviceGetUuid_v2, else v1: NVML is never loaded here),
// and its slot in the file.
int resolve_device_slot(int ordinal, std::string& why) {
  const auto uuid = driver::device_uuid(ordinal);
  if (!uuid) {
    why = "the driver gave no UUID for CUDA device " + std::to_string(ordinal);
    return -1;
  }
  const int slot = run::counting_device(*g_counters, *uuid);
  if (slot < 0) {
    why = "more than " + std::to_string(run::kMaxDevices) + " devices in one run";
  }
  return slot;
}

// The ordinal's device slot, resolved on its first event and named in `slot` for the monitor; -1
// when it has none (the process then stops counting, after the call).
int device_slot(ProcessSlot& slot, int ordinal) noexcept {
  const int known = g_device_slots[ordinal].load(std::memory_order_relaxed);
  if (known != 0) [[likely]]
    return known > 0 ? known - 1 : -1;
  std::string why;
  try {
    const int found = resolve_device_slot(ordinal, why);
    g_device_slots[ordinal].store(found >= 0 ? found + 1 : -1, std::memory_order_relaxed);
    slot.ordinal_device[ordinal].store(found >= 0 ? found + 1 : -1, std::memory_order_release);
    if (found >= 0) return found;
    if (!g_stop_claimed.exchange(true)) {
      g_stop_reason = why;
      g_stop_pending.store(true, std::memory_order_release);
    }
  } catch (...) {  // out of host memory for the reason: stay unresolved, try again next event
  }
  return -1;
}

// The ledger's mirror: each event's bytes on its device's level in the shared file, before the
// ledger word in this process's slot moves by them (`ctx` is that slot), and the device's
// bracketed level as the event's call moves it.
std::int64_t on_event(void* ctx, int ordinal, std::int64_t delta_bytes,
                      detail::LedgerBracket bracket) noexcept {
  ProcessSlot& slot = *static_cast<ProcessSlot*>(ctx);
  const int device = device_slot(slot, ordinal);
  if (device < 0) return detail::kUnbracketed;
  return run::add_bracketed_event(*g_counters, device, delta_bytes, bracket);
}

// Moves the exact source's ledger into `slot`: a new process's from its level (nothing yet), a
// forked child's from 0.
bool place_ledger(ProcessSlot& slot, detail::LedgerStart start) noexcept {
  // The slot names the ordinals already resolved (a forked child's, inherited).
  for (int ordinal = 0; ordinal < detail::kLedgerOrdinals; ++ordinal) {
    slot.ordinal_device[ordinal].store(g_device_slots[ordinal].load(std::memory_order_relaxed),
                                       std::memory_order_release);
  }
  return detail::place_exact_ledger({slot.ledger, on_event, &slot}, start);
}

// The gate's private futex: the word is this process's own.
void wait_at_gate() noexcept {
  const std::int64_t deadline = run::monotonic_ns() + kAnswerTimeoutNs;
  for (;;) {
    const std::uint32_t gate = g_gate.load(std::memory_order_acquire);
    if (gate == 0) return;
    const std::int64_t left = deadline - run::monotonic_ns();
    if (left <= 0) return;
    timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                     static_cast<long>(left % 1'000'000'000)};
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&g_gate), FUTEX_WAIT_PRIVATE, gate,
              &timeout, nullptr, 0);
  }
}

// Asks the monitor for a reading of `kind` with the gate shut; false when none was taken (another
// thread is asking, the monitor did not answer, or a call stayed in flight).
bool ask(ProcessSlot& slot, std::uint32_t kind) noexcept {
  if (g_monitor_silent.load(std::memory_order_relaxed)) return false;
  std::uint32_t open = 0;
  if (!g_gate.compare_exchange_strong(open, 1, std::memory_order_seq_cst)) return false;
  const std::uint32_t answer = run::ask_for_reading(*g_counters, slot, kind, kAnswerTimeoutNs);
  g_gate.store(0, std::memory_order_release);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&g_gate), FUTEX_WAKE_PRIVATE, INT32_MAX,
            nullptr, nullptr, 0);
  if (answer == 0) g_monitor_silent.store(true, std::memory_order_relaxed);
  if (answer == run::kAnswerBusy) g_busy_answers.fetch_add(1, std::memory_order_relaxed);
  return answer == run::kAnswerRead;
}

// A context was created (inside the call that created it): ask at the call's end. The first one
// tells the monitor when this process's context began to stand on the device.
void on_context(void*) noexcept {
  if (ProcessSlot* slot = g_slot.load(std::memory_order_acquire)) {
    std::int64_t none = 0;
    slot->context_ns.compare_exchange_strong(none, run::monotonic_ns(), std::memory_order_release);
  }
  g_had_context.store(true, std::memory_order_relaxed);
  g_context_pending.store(true, std::memory_order_release);
}

// The pending reading of a new context, at the end of an outermost call.
void ask_for_context(ProcessSlot& slot) noexcept {
  if (!g_context_pending.exchange(false, std::memory_order_acq_rel)) return;
  if (!ask(slot, run::kAskedAtContext) &&
      g_busy_answers.load(std::memory_order_relaxed) < kMaxBusyAnswers &&
      !g_monitor_silent.load(std::memory_order_relaxed))
    g_context_pending.store(true, std::memory_order_release);  // the next call's end asks again
}

// The calling thread's line among the slot's `calls` (run_counters.hpp), taken at its first
// traced call in this slot (a forked child's thread takes one in the child's): nullptr when every
// line was taken. Initial-exec, as in_flight's slot: on every call.
struct ThreadLine {
  ProcessSlot* slot = nullptr;
  run::CallLine* line = nullptr;
};
[[gnu::tls_model("initial-exec")]] thread_local ThreadLine t_line;

// A call's ENTER or EXIT on the thread's own line: no read-modify-write, no line another thread
// writes. A thread beyond the lines marks the slot's shared word.
[[gnu::always_inline]] inline void mark_call(ProcessSlot& slot, bool entering) noexcept {
  ThreadLine& mine = t_line;
  if (mine.slot != &slot) [[unlikely]] {
    mine.slot = &slot;
    mine.line = run::take_call_line(slot);
  }
  if (mine.line == nullptr) [[unlikely]] {
    slot.calls.fetch_add(entering ? run::kCallEntered : run::kCallLeft, std::memory_order_seq_cst);
  } else if (entering) {
    run::enter_call(*mine.line);
  } else {
    run::leave_call(*mine.line);
  }
}

// Every outermost traced call's ENTER and EXIT, in the slot's `calls` (run_counters.hpp): the
// monitor reconciles NVML's figure for this process only from a reading no call overlapped. An EXIT
// after the slot was given back (at exit) has nothing to balance: the slot's next owner starts
// afresh.
void on_call(void*, bool entering) {
  ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
  if (slot == nullptr) return;
  if (entering && g_gate.load(std::memory_order_acquire) != 0) [[unlikely]]
    wait_at_gate();  // before the ENTER counts: the reading under way sees no call of ours
  mark_call(*slot, entering);
  if (!entering && g_context_pending.load(std::memory_order_relaxed)) [[unlikely]]
    ask_for_context(*slot);
  if (!entering && g_stop_pending.load(std::memory_order_acquire)) [[unlikely]] {
    try {
      stop_counting(g_stop_reason);
    } catch (...) {  // out of host memory for the record: stopped all the same
    }
  }
}

ProcessSlot* claim_slot() {
  const std::int32_t pid = ::getpid();
  // A fork child or an exec in a new pid namespace is another process with maybe the same pid.
  const std::uint64_t pid_namespace = run::own_pid_namespace();
  const std::size_t used = run::process_slots_used(*g_counters);
  for (std::size_t index = 0; index < used; ++index) {
    ProcessSlot& slot = g_counters->processes[index];
    if (slot.pid.load(std::memory_order_relaxed) == pid &&
        slot.pid_namespace.load(std::memory_order_relaxed) == pid_namespace) {
      // Our image before an exec: what it held moves outside any call, and a call of it may
      // have been in flight.
      slot.calls.fetch_add(run::kCallEntered, std::memory_order_seq_cst);
      run::give_back(*g_counters, slot);
      slot.claimed_ns.store(run::monotonic_ns(), std::memory_order_relaxed);
      slot.released_ns.store(0, std::memory_order_relaxed);
      slot.context_ns.store(0, std::memory_order_relaxed);
      run::reset_calls(slot);
      return &slot;
    }
  }
  for (ProcessSlot& slot : g_counters->processes) {
    std::int32_t expected = 0;
    if (slot.pid.compare_exchange_strong(expected, pid, std::memory_order_acq_rel)) {
      run::note_process_slot(*g_counters, static_cast<int>(&slot - g_counters->processes));
      // An event racing its previous owner's exit may have left bytes here: they are not ours.
      run::give_back(*g_counters, slot);
      slot.claimed_ns.store(run::monotonic_ns(), std::memory_order_relaxed);
      slot.released_ns.store(0, std::memory_order_relaxed);
      slot.context_ns.store(0, std::memory_order_relaxed);
      run::reset_calls(slot);
      slot.pid_namespace.store(pid_namespace, std::memory_order_release);
      return &slot;
    }
  }
  g_counters->slots_exhausted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// Gives back what the slot's ledger holds, and the slot for another process to claim.
void free_slot(ProcessSlot& slot) noexcept {
  run::give_back(*g_counters, slot);
  slot.pid_namespace.store(0, std::memory_order_relaxed);
  std::int32_t pid = ::getpid();
  slot.pid.compare_exchange_strong(pid, 0, std::memory_order_acq_rel);
}

// false when there was none to release (another thread did, or the process never counted).
bool release_slot() {
  ProcessSlot* slot = g_slot.exchange(nullptr, std::memory_order_acq_rel);
  if (slot == nullptr) return false;
  // The ledger comes home first: a late event (a free in a static destructor) moves this
  // process's own word from now on. One that had already found the slot's word adds to both
  // the word and the device's level, and the next owner's give_back takes it off both.
  detail::unplace_exact_ledger();
  // Given back while the driver still shows our memory: no reading of the slot from now on may
  // pass for one no call overlapped (a call that never leaves; the next owner resets it).
  slot->calls.fetch_add(run::kCallEntered, std::memory_order_seq_cst);
  slot->released_ns.store(run::monotonic_ns(), std::memory_order_release);
  free_slot(*slot);
  return true;
}

// An event this process cannot count: what it counted is taken back and the monitor samples it
// instead, so nothing is counted twice or half.
void stop_counting(const std::string& reason) {
  if (!release_slot()) return;
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  run::record_attach(*g_counters, ::getpid(), run::own_pid_namespace(), run::kAttachedLost, reason);
}

void report_fallback(const std::string& reason) {
  g_counters->processes_fallback.fetch_add(1, std::memory_order_relaxed);
  run::record_attach(*g_counters, ::getpid(), run::own_pid_namespace(), run::kAttachedFallback,
                     reason);
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
  // The child is single-threaded: no reading of its parent's is under way here. It holds its own
  // copy of the parent's contexts (the driver charges them to it), which no CONTEXT_CREATED
  // announces: it asks for them at its first call's end.
  g_gate.store(0, std::memory_order_relaxed);
  g_busy_answers.store(0, std::memory_order_relaxed);
  g_context_pending.store(g_had_context.load(std::memory_order_relaxed), std::memory_order_relaxed);
  if (g_slot.load(std::memory_order_relaxed) == nullptr) return;
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr || !place_ledger(*slot, detail::LedgerStart::empty_in_forked_child)) {
    // The parent's slot is not ours: nothing of the child may move it.
    detail::unplace_exact_ledger(/*in_forked_child=*/true);
    g_slot.store(nullptr, std::memory_order_release);
    if (slot != nullptr) free_slot(*slot);
    report_fallback("too many CUDA processes to count");
    return;
  }
  // Its copies of the parent's contexts stand from its start.
  if (g_had_context.load(std::memory_order_relaxed))
    slot->context_ns.store(slot->claimed_ns.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  run::record_attach(*g_counters, ::getpid(), run::own_pid_namespace(), run::kAttachedExact, {});
  g_slot.store(slot, std::memory_order_release);
}

// Takes the CUPTI subscription, which delivers every device's events, for the life of the
// process (never released: callbacks may still arrive while static destructors run). Directly,
// not through a PeakCounter: that would resolve the device through NVML.
bool start_exact_source() {
  if (peak::acquire_exact()) return true;
  const std::string why = peak::exact_status();
  report_fallback(why.empty() ? "the exact source is unavailable" : why);
  return false;
}

// `gpumem run --attribute/--html` names a directory: each process writes its out-of-memory
// document there as it fails (the engine, GPUMEM_OOM_REPORT) and its peaks at exit.
std::string attribution_file(const char* what) {
  const char* dir = std::getenv(run::kAttributionDirVariable);
  if (dir == nullptr || *dir == '\0') return {};
  // Named as the process names itself (its pid and pid namespace), so the run can tell which
  // of NVML's processes wrote it.
  return std::string(dir) + "/" + what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(run::own_pid_namespace()) + ".json";
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
    const auto peaks = detail::run_attribution_peaks();
    if (peaks.empty()) return;
    const std::string text = attribution_json(peaks);
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
  if (detail::start_run_attribution(run::kMaxDevices)) {
    std::atexit(write_attribution_peaks);
  }
}

void join() {
  const char* path = std::getenv(run::kCountersVariable);
  if (path == nullptr || *path == '\0') return;  // not under `gpumem run`: stay out of the way
  g_counters = run::map_run_counters(path, /*create=*/false, nullptr);
  if (g_counters == nullptr) return;
  g_counters->processes_attached.fetch_add(1, std::memory_order_relaxed);
  ProcessSlot* slot = claim_slot();
  if (slot == nullptr) {
    report_fallback("too many CUDA processes to count");
    return;
  }
  if (!place_ledger(*slot, detail::LedgerStart::carry)) {
    g_slot.store(slot, std::memory_order_release);
    release_slot();
    report_fallback("out of memory for the ledger's placement");
    return;
  }
  g_slot.store(slot, std::memory_order_release);
  detail::set_call_observer(on_call, nullptr);
  detail::set_context_observer(on_context, nullptr);
  // No NVML in a measured process: the monitor reconciles contexts from its own samples.
  detail::set_footprint_reconciliation(false);
  if (!start_exact_source()) {
    detail::set_call_observer(nullptr, nullptr);
    release_slot();
    return;
  }
  g_counters->processes_exact.fetch_add(1, std::memory_order_relaxed);
  run::record_attach(*g_counters, ::getpid(), run::own_pid_namespace(), run::kAttachedExact, {});
  ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
  std::atexit([] {
    // A last reading while the context is still there: until now the process, its context
    // included, stood on the device.
    if (ProcessSlot* slot = g_slot.load(std::memory_order_acquire);
        slot != nullptr && g_had_context.load(std::memory_order_relaxed))
      ask(*slot, run::kAskedAtExit);
    release_slot();
  });
  start_attribution();
}

}  // namespace
}  // namespace gpumem::run::joined

namespace gpumem::run {

void join_run() noexcept {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return;
  try {
    joined::join();
  } catch (...) {
    // Out of host memory while joining: the monitor samples this process instead.
  }
}

}  // namespace gpumem::run
