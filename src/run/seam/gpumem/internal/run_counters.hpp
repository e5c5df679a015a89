// The file `gpumem run` shares with the processes of the command it measures. The injection
// library maps it into every CUDA process of the tree and adds each device-memory event to the
// counters of the physical device it happened on, named by the device's UUID, so the peak of
// the whole tree is exact even when children allocate concurrently and whatever device mask
// (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER) each of them runs under. With a timeline requested,
// each event's time and the device's new level also go to a ring the monitor drains.
// Plain atomics on MAP_SHARED memory: lock-free, no syscall per event.
//
// A seam between rooms (src/run implements it; the peak room's ledger lives in it): the measured
// side (run_process.hpp) and the monitor share one definition of the file, in libgpumem.so. No
// tool calls it (the injection library joins a run through run_process.hpp, `gpumem run` creates
// the file through run_engine.hpp), so all of it is hidden there.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/exact_ledger.hpp"

namespace gpumem::run {

// The environment variable naming the file, set by `gpumem run` for the command.
inline constexpr const char* kCountersVariable = "GPUMEM_RUN_COUNTERS";
// The one that asks the injection library to attribute (--attribute/--html), naming the folder
// each process writes its attribution documents in.
inline constexpr const char* kAttributionDirVariable = "GPUMEM_RUN_ATTRIBUTION_DIR";

inline constexpr std::uint32_t kCountersMagic = 0x67706d72;  // "gpmr"
inline constexpr std::uint32_t kCountersVersion = 12;
inline constexpr int kMaxDevices = 64;     // physical devices (UUIDs) counted in one run
inline constexpr int kMaxProcesses = 512;  // CUDA processes of one tree tracked at once
inline constexpr int kMaxRecords = 4096;   // processes whose attachment is recorded, per run
inline constexpr int kMaxAliases = 256;    // MIG devices counted under their GPU
// Timeline events kept for the monitor: 2 MiB of the file; at a million events a second it
// holds 65 ms, and the monitor drains it every few milliseconds.
inline constexpr std::uint64_t kEventRingSize = 1u << 16;

// A device's identity: the 16 bytes of cuDeviceGetUuid (a MIG instance's own UUID for a MIG
// device), the same bytes NVML prints as "GPU-…"/"MIG-…".
using Uuid = std::array<unsigned char, 16>;
// "GPU-1b0a4a6e-0b8f-…", "MIG-…" or the bare hex: the 16 bytes; nullopt for anything else (the
// pre-R470 "MIG-GPU-…/gi/ci" names carry no UUID of their own).
std::optional<Uuid> parse_uuid(std::string_view text);

// What one process holds, so the monitor can tell its context apart from its events and give back
// what a process that died without freeing (SIGKILL, _exit) held: the driver frees it, and no
// free event comes. It is the process's exact ledger itself (exact_ledger.hpp): the library keeps
// the level word of each CUDA ordinal here, and moves it once per event, after adding the event
// to its device slot's `current` (the ledger's mirror), so that `current` always holds what the
// words hold. `ordinal_device` names each ordinal's device slot (slot + 1; 0 while the ordinal
// has had no event, -1 when it has none: its events are in no `current`).
// A process is named by its pid in its own pid namespace and that namespace (the inode of
// /proc/self/ns/pid; kUnknownNamespace when it cannot be read): in a nested namespace (a
// container started by the command) the pid alone is not unique, and it is not the monitor's.
inline constexpr std::uint64_t kUnknownNamespace = ~std::uint64_t{0};

//
// `calls` tells the monitor whether the ledger and the driver's own figures agree. The driver
// charges an allocation (NVML shows it) before the call returns and its EXIT callback adds it to
// the ledger, and releases a block before the EXIT of its free takes it off: a reading taken in
// between is off by the block. Every traced call adds 1 at its ENTER (`kCallEntered`, the low 16
// bits: the calls in flight) and `kCallLeft` after its EXIT (one call fewer in flight, the
// generation in the high 48 bits one higher), a thread's outermost call only (the driver calls
// inside a runtime call are inside its ENTER and EXIT), and so does anything else that moves the
// ledger outside a call (the slot being given back, `kCallEntered` never left). The monitor reads
// NVML between two read_calls(): the reading agrees with the ledger only when both return the
// same value with no call in flight (`quiet_calls`), because any call that overlapped it changed
// a word (docs/peaks.md, "Why the reconciliation cannot double count").
inline constexpr std::uint64_t kCallEntered = 1;
inline constexpr std::uint64_t kCallLeft = (std::uint64_t{1} << 16) - 1;
inline constexpr std::uint64_t kCallsInFlightMask = 0xffff;

// The word is spread over lines, so that a call moves no word another thread writes: each of a
// process's first kCallLines threads that makes a traced call takes a line of the slot for its
// life (`call_lines_used` counts them), and marks its calls there with a load and a store, no
// read-modify-write; a thread beyond them, and the slot's own marks (claimed, given back), use
// `calls` itself. read_calls() sums them into the one value above.
inline constexpr int kCallLines = 16;
struct alignas(64) CallLine {
  std::atomic<std::uint64_t> word;  // as `calls`: in flight (low 16 bits), generation above
};

struct alignas(64) ProcessSlot {
  std::atomic<std::int32_t> pid;             // 0: free slot; -1: being given back
  std::atomic<std::uint64_t> pid_namespace;  // 0 while being claimed
  std::atomic<std::uint64_t> calls;          // in flight (low 16 bits) and generation (above)
  std::atomic<std::int64_t> claimed_ns;      // CLOCK_MONOTONIC when its process claimed it
  // CLOCK_MONOTONIC when its process gave it back at exit (0 while it runs, or when the monitor
  // gave it back for a process that died): until then the process, its context included, was
  // there, so a peak made before it still stood on that context.
  std::atomic<std::int64_t> released_ns;
  // CLOCK_MONOTONIC when its process's first context was created (0: none yet; a forked child's
  // inherited ones: when it claimed the slot). A peak made before it stood on no context of this
  // process, even though the process had claimed its slot.
  std::atomic<std::int64_t> context_ns;
  std::atomic<std::int32_t> call_lines_used;  // lines taken by its threads (may pass kCallLines)
  // Moved by every event of the process: on lines the monitor's scans of the words above do
  // not share.
  alignas(64) std::atomic<std::uint64_t> ledger[detail::kLedgerOrdinals];
  std::atomic<std::int32_t> ordinal_device[detail::kLedgerOrdinals];
  // A reading asked by the process (reading_request.cpp, docs/peaks.md "How the context is
  // known"): `asked` counts its requests, the monitor copies it to `answered` once it has read
  // NVML's figure for the process while none of its calls was in flight (`answer` says how it
  // went: one of kAnswer*). Futex words, waited on by the process and the monitor.
  std::atomic<std::uint32_t> asked;
  std::atomic<std::uint32_t> answered;
  std::atomic<std::uint32_t> answer;
  std::atomic<std::uint32_t> asked_kind;  // kAskedAt*
  CallLine call_lines[kCallLines];
};

// What a process's request for a reading says, and what the monitor answered.
inline constexpr std::uint32_t kAskedAtContext = 1;  // a context of it was created
inline constexpr std::uint32_t kAskedAtExit = 2;     // it gives its slot back now
inline constexpr std::uint32_t kAnswerRead = 1;      // read with no call in flight
inline constexpr std::uint32_t kAnswerBusy = 2;      // a call stayed in flight: ask again

// Whether a value of `calls` says no call was in flight.
inline bool quiet_calls(std::uint64_t calls) noexcept {
  return (calls & kCallsInFlightMask) == 0;
}

// The slot's `calls` as one value: every line's calls in flight (their sum, at most the mask)
// and the sum of the generations, which only grow. Two equal readings with none in flight mean
// no call of the process overlapped the time between them. `call_lines_used` is the file's, so
// it is clamped: a forged count reads the lines there are.
inline std::uint64_t read_calls(const ProcessSlot& slot) noexcept {
  std::uint64_t in_flight = 0;
  std::uint64_t generation = 0;
  auto add = [&](std::uint64_t word) noexcept {
    in_flight += word & kCallsInFlightMask;
    generation += word >> 16;
  };
  add(slot.calls.load(std::memory_order_acquire));
  const int lines = std::clamp(slot.call_lines_used.load(std::memory_order_acquire), 0, kCallLines);
  for (int line = 0; line < lines; ++line)
    add(slot.call_lines[line].word.load(std::memory_order_acquire));
  return (generation << 16) | std::min(in_flight, kCallsInFlightMask);
}

// A claimed slot starts with no call in flight, in a generation of its own (a reading that
// spans a change of owner is refused), and with its lines free for its threads: their
// generations are carried into `calls`, so that a line taken again changes no reading. Called by
// the claimant, before any thread of it marks a call.
inline void reset_calls(ProcessSlot& slot) noexcept {
  std::uint64_t generation = slot.calls.load(std::memory_order_relaxed) >> 16;
  for (const CallLine& line : slot.call_lines)
    generation += line.word.load(std::memory_order_relaxed) >> 16;
  slot.calls.store((generation + 1) << 16, std::memory_order_release);
  for (CallLine& line : slot.call_lines) line.word.store(0, std::memory_order_relaxed);
  slot.call_lines_used.store(0, std::memory_order_release);
}

// A thread's line in `slot`, taken at its first traced call: nullptr when every line is taken
// (the thread then marks its calls in `calls`).
inline CallLine* take_call_line(ProcessSlot& slot) noexcept {
  const std::int32_t index = slot.call_lines_used.fetch_add(1, std::memory_order_acq_rel);
  return index >= 0 && index < kCallLines ? &slot.call_lines[index] : nullptr;
}

// A traced call's ENTER on the calling thread's own line. Only that thread writes the line: a
// load and a store. The driver's charge (a later store of this thread) must not become visible
// before it: the release fence orders it before every later store (free on x86).
inline void enter_call(CallLine& line) noexcept {
  const std::uint64_t word = line.word.load(std::memory_order_relaxed);
  line.word.store(word + kCallEntered, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

// Its EXIT, after its events moved the ledger (release: a monitor that sees the call left sees
// them). An EXIT whose ENTER was not marked (the slot was taken meanwhile) has nothing to leave.
inline void leave_call(CallLine& line) noexcept {
  const std::uint64_t word = line.word.load(std::memory_order_relaxed);
  if ((word & kCallsInFlightMask) == 0) return;
  line.word.store(word + kCallLeft, std::memory_order_release);
}

// How one process that loaded the injection library is measured, so the monitor can say which
// of the command's GPU processes were counted exactly and which escaped. Written once.
// Room for a fallback reason: the longest gpumem writes is under 300 bytes.
inline constexpr std::size_t kReasonBytes = 1024;

struct AttachRecord {
  std::atomic<std::int32_t> pid;
  std::atomic<std::uint64_t> pid_namespace;
  std::atomic<std::int32_t> state;  // 0 being written, else one of kAttached*
  // Whole: the summary wraps it rather than cutting it (a CUPTI error name is 50 characters).
  char reason[kReasonBytes];
};
inline constexpr std::int32_t kAttachedExact = 1;
inline constexpr std::int32_t kAttachedFallback = 2;  // never counted (see reason)
inline constexpr std::int32_t kAttachedLost = 3;      // counted, then stopped (see reason)

// States of a device slot: named once, by the first process that counts on that device.
inline constexpr std::uint32_t kDeviceFree = 0;
inline constexpr std::uint32_t kDeviceNaming = 1;  // its UUID is being written
inline constexpr std::uint32_t kDeviceNamed = 2;

// A line of its own per device: processes allocating on different GPUs do not contend.
struct alignas(64) DeviceCounters {
  std::atomic<std::uint32_t> state;
  unsigned char uuid[16];                  // written before `state` becomes kDeviceNamed
  std::atomic<std::int64_t> current;       // bytes the tree holds now
  std::atomic<std::int64_t> peak;          // highest `current` ever
  std::atomic<std::int64_t> peak_time_ns;  // CLOCK_MONOTONIC when `peak` was last raised
  // `current` plus the bytes of the tree's block calls in flight (exact_ledger.hpp's bracket):
  // never below what the device holds of the events, as `current` is never above it; and its
  // highest, raised only by allocations that succeeded. Where `bracket_peak` is above `peak`,
  // calls that allocated and freed were in flight together around the peak, and the device's
  // events peaked between the two (docs/peaks.md, "Calls in flight together").
  std::atomic<std::int64_t> bracket;
  std::atomic<std::int64_t> bracket_peak;
};

// A MIG device that the monitor measures as part of its GPU: events on it count in the GPU's
// slot, so the GPU's figures sum every process on it whichever MIG device it used.
struct DeviceAlias {
  unsigned char uuid[16];
  std::int32_t device;  // the GPU's slot
};

// One event of the timeline: the level its device (slot) reached, and when. A seqlock entry:
// `sequence` is its ring position + 1 once written, 0 while it is being written.
struct TimelineEvent {
  std::atomic<std::uint64_t> sequence;
  std::atomic<std::int64_t> time_ns;
  std::atomic<std::int64_t> level;
  std::atomic<std::int32_t> device;  // device slot
};

struct EventRing {
  alignas(64) std::atomic<std::uint64_t> head;  // positions handed out so far
  alignas(64) TimelineEvent events[kEventRingSize];
};

struct RunCounters {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t monitor_pid;  // the `gpumem run` that created the file
  // Set by the monitor before the command starts: measured processes append every event to
  // `ring` (only when a timeline was asked for; otherwise the ring costs nothing).
  std::int32_t timeline;
  std::atomic<std::int32_t> processes_attached;  // processes that loaded the injection library
  std::atomic<std::int32_t> processes_exact;     // of which the exact source worked
  std::atomic<std::int32_t> processes_fallback;  // of which it did not, or could not be counted
  std::atomic<std::int32_t> slots_exhausted;
  std::atomic<std::int32_t> reason_claimed;  // first fallback reason wins
  // Rung (incremented, then woken) by a process that asks for a reading: the monitor waits on it.
  std::atomic<std::uint32_t> doorbell;
  char fallback_reason[kReasonBytes];
  DeviceCounters devices[kMaxDevices];
  // Written by the monitor before the command starts; read-only afterwards.
  std::int32_t alias_count;
  DeviceAlias aliases[kMaxAliases];
  // Slots [0, processes_used) have been claimed at some time: the monitor looks no further.
  std::atomic<std::int32_t> processes_used;
  ProcessSlot processes[kMaxProcesses];
  std::atomic<std::int32_t> record_count;  // may pass kMaxRecords: the rest were not recorded
  AttachRecord records[kMaxRecords];
  EventRing ring;
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);
static_assert(sizeof(DeviceCounters) == 64);

// The clock of `peak_time_ns` and the timeline, shared by the measured processes and the
// monitor: the library's monotonic clock (CLOCK_MONOTONIC).
using support::monotonic_ns;

// Appends one timeline event (any thread of any process).
inline void append_event(EventRing& ring, int device, std::int64_t time_ns,
                         std::int64_t level) noexcept {
  const std::uint64_t position = ring.head.fetch_add(1, std::memory_order_relaxed);
  TimelineEvent& event = ring.events[position % kEventRingSize];
  event.sequence.store(0, std::memory_order_relaxed);
  // A reader that sees any of the stores below also sees the entry marked as being written.
  std::atomic_thread_fence(std::memory_order_release);
  event.time_ns.store(time_ns, std::memory_order_relaxed);
  event.level.store(level, std::memory_order_relaxed);
  event.device.store(device, std::memory_order_relaxed);
  event.sequence.store(position + 1, std::memory_order_release);
}

// Raises the peak; `now_ns` is the event's time when the caller read the clock (0: read it here,
// only if the peak rises: reading it on every event would cost more than the counting).
inline void raise_peak(DeviceCounters& counters, std::int64_t level, std::int64_t now_ns) noexcept {
  std::int64_t peak = counters.peak.load(std::memory_order_relaxed);
  while (level > peak) {
    if (counters.peak.compare_exchange_weak(peak, level, std::memory_order_relaxed)) {
      counters.peak_time_ns.store(now_ns != 0 ? now_ns : monotonic_ns(), std::memory_order_relaxed);
      return;
    }
  }
}

// Moves device slot `device`'s bracketed level as `bracket` says (detail::LedgerBracket) and
// raises its peak; returns the level it reached.
inline std::int64_t move_bracket(DeviceCounters& slot, detail::LedgerBracket bracket) noexcept {
  const std::int64_t level =
      bracket.delta != 0
          ? slot.bracket.fetch_add(bracket.delta, std::memory_order_relaxed) + bracket.delta
          : slot.bracket.load(std::memory_order_relaxed);
  std::int64_t top = bracket.peak;
  if (top == detail::kBracketAtLevel) {
    if (bracket.delta <= 0) return level;
    top = level;
  } else if (top == detail::kBracketNoPeak) {
    return level;
  }
  std::int64_t peak = slot.bracket_peak.load(std::memory_order_relaxed);
  while (top > peak &&
         !slot.bracket_peak.compare_exchange_weak(peak, top, std::memory_order_relaxed)) {
  }
  return level;
}

// Adds an event's bytes to device slot `device`'s level (not its bracketed level), raises its
// peak and, when the run keeps a timeline, appends the event. Returns the new level.
inline std::int64_t add_level(RunCounters& counters, int device, std::int64_t delta) noexcept {
  DeviceCounters& slot = counters.devices[device];
  const std::int64_t level = slot.current.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (counters.timeline != 0) {
    const std::int64_t now = monotonic_ns();
    if (delta > 0) raise_peak(slot, level, now);
    append_event(counters.ring, device, now, level);
  } else if (delta > 0) {
    raise_peak(slot, level, 0);
  }
  return level;
}

// An event outside the block calls' brackets (a pool's or a graph's change, memory given back):
// device slot `device`'s level and its bracketed level both move by `delta`. Returns the level.
inline std::int64_t add_event(RunCounters& counters, int device, std::int64_t delta) noexcept {
  move_bracket(counters.devices[device], {delta, detail::kBracketAtLevel});
  return add_level(counters, device, delta);
}

// A half of a block call (exact_ledger.hpp): the level moves by `delta` (0 for the half that
// moves only the bracketed level) and the bracketed level as `bracket` says. Returns the
// bracketed level it reached.
inline std::int64_t add_bracketed_event(RunCounters& counters, int device, std::int64_t delta,
                                        detail::LedgerBracket bracket) noexcept {
  const std::int64_t upper = move_bracket(counters.devices[device], bracket);
  if (delta != 0) add_level(counters, device, delta);
  return upper;
}

// What a process's ledger holds on device slot `device`: the sum of its ordinals counted there.
inline std::int64_t ledger_bytes(const ProcessSlot& slot, int device) noexcept {
  std::int64_t bytes = 0;
  for (int ordinal = 0; ordinal < detail::kLedgerOrdinals; ++ordinal) {
    if (slot.ordinal_device[ordinal].load(std::memory_order_acquire) == device + 1)
      bytes += detail::ledger_level(slot.ledger[ordinal].load(std::memory_order_acquire));
  }
  return bytes;
}

// The process slots ever claimed: the monitor's view of `processes`.
inline std::size_t process_slots_used(const RunCounters& counters) noexcept {
  const std::int32_t used = counters.processes_used.load(std::memory_order_acquire);
  return static_cast<std::size_t>(std::clamp(used, 0, kMaxProcesses));
}

// The device slot for `uuid`: the one already named so, or the first free one, named now.
// Lock-free (a compare-and-swap on the slot's state); -1 when all kMaxDevices are taken.
int find_or_claim_device(RunCounters& counters, const Uuid& uuid) noexcept;
// The slot named `uuid`, -1 when none is (yet): the monitor's side, which claims nothing.
int find_device(const RunCounters& counters, const Uuid& uuid) noexcept;
// The slot a measured process counts a device's events in: its GPU's, for a MIG device the
// monitor measures as part of its GPU, else its own (found or claimed); -1 when none is left.
int counting_device(RunCounters& counters, const Uuid& uuid) noexcept;
// The monitor's side: counts `uuid`'s events in slot `device` (false when the table is full).
bool add_alias(RunCounters& counters, const Uuid& uuid, int device) noexcept;

// Marks slot `index` as claimed, for the monitor's scans (call after claiming it).
void note_process_slot(RunCounters& counters, int index) noexcept;

// Takes what a process's ledger still holds off the tree's levels, and empties it for a next
// owner: the driver frees a process's memory when it exits (or when an exec replaces its image),
// and no free event comes for it.
void give_back(RunCounters& counters, ProcessSlot& slot) noexcept;

// The caller's pid namespace, as slots and records name it.
std::uint64_t own_pid_namespace() noexcept;

// Records how process `pid` (of namespace `pid_namespace`) is measured (`reason` when it is not
// counted exactly).
void record_attach(RunCounters& counters, std::int32_t pid, std::uint64_t pid_namespace,
                   std::int32_t state, const std::string& reason) noexcept;

// The monitor's reading of the timeline ring: every event since the last drain, in ring order,
// to `sink`. An entry still being written stops the drain (it is read next time) unless the
// writer fell far behind (it died mid-write) or `final` is set; events overwritten before they
// were read are counted in `lost`.
struct RingReader {
  std::uint64_t position = 0;
  std::uint64_t lost = 0;
  void drain(const EventRing& ring, bool final,
             const std::function<void(int device, std::int64_t time_ns, std::int64_t level)>& sink);
};

// Reading requests (reading_request.cpp). The process's side: asks for a reading of `kind`,
// rings the doorbell and waits until the monitor answered or `timeout_ns` passed; returns the
// answer (kAnswer*), 0 when none came in time.
std::uint32_t ask_for_reading(RunCounters& counters, ProcessSlot& slot, std::uint32_t kind,
                              std::int64_t timeout_ns) noexcept;
// The monitor's side: waits until the doorbell moves from `seen` or `timeout_ns` passed.
void wait_for_doorbell(RunCounters& counters, std::uint32_t seen, std::int64_t timeout_ns) noexcept;
// Rings the doorbell (the monitor's own stop, too).
void ring_doorbell(RunCounters& counters) noexcept;
// Answers request `asked` of `slot` and wakes its process.
void answer_reading(ProcessSlot& slot, std::uint32_t asked, std::uint32_t answer) noexcept;

// The monitor's: a sealed memory file (it can neither shrink nor grow) with its pages allocated,
// left open (`descriptor`, the caller closes it after unmapping) for the command to inherit;
// `path` names it through /proc.
RunCounters* create_run_counters(std::string* path, int* descriptor, std::string* error);

// Maps the file (created by the monitor, or opened by a measured process); nullptr on failure.
// `create` sizes and initialises it.
// A process of the command whose own /proc hides the monitor's (a pid namespace with a /proc of
// its own) opens the descriptor it inherited, named by the path's tail.
RunCounters* map_run_counters(const std::string& path, bool create, std::string* error);
void unmap_run_counters(RunCounters* counters);

}  // namespace gpumem::run
