// The file `gpumem run` shares with the processes of the command it measures. The injection
// library maps it into every CUDA process of the tree and adds each device-memory event to the
// counters, so the peak of the whole tree is exact even when children allocate concurrently.
// Plain atomics on MAP_SHARED memory: lock-free, no syscall per event.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpumem::run {

// The environment variable naming the file, set by `gpumem run` for the command.
inline constexpr const char* kCountersVariable = "GPUMEM_RUN_COUNTERS";

inline constexpr std::uint32_t kCountersMagic = 0x67706d72;  // "gpmr"
inline constexpr std::uint32_t kCountersVersion = 4;
inline constexpr int kMaxDevices = 64;     // CUDA ordinals counted; events beyond are dropped
inline constexpr int kMaxProcesses = 512;  // CUDA processes of one tree tracked at once
inline constexpr int kMaxRecords = 4096;   // processes whose attachment is recorded, per run

// What one process still holds, so the monitor can give back what a process that died without
// freeing (SIGKILL, _exit) held: the driver frees it, and no free event ever comes.
// A process is named by its pid in its own pid namespace and that namespace (the inode of
// /proc/self/ns/pid; kUnknownNamespace when it cannot be read): in a nested namespace (a
// container started by the command) the pid alone is not unique, and it is not the monitor's.
inline constexpr std::uint64_t kUnknownNamespace = ~std::uint64_t{0};

struct ProcessSlot {
  std::atomic<std::int32_t> pid;             // 0: free slot; -1: being given back
  std::atomic<std::uint64_t> pid_namespace;  // 0 while being claimed
  std::atomic<std::int64_t> held[kMaxDevices];
};

// How one process that loaded the injection library is measured, so the monitor can say which
// of the command's GPU processes were counted exactly and which escaped. Written once.
struct AttachRecord {
  std::atomic<std::int32_t> pid;
  std::atomic<std::uint64_t> pid_namespace;
  std::atomic<std::int32_t> state;  // 0 being written, 1 exact, 2 not counted (see reason)
  char reason[120];
};
inline constexpr std::int32_t kAttachedExact = 1;
inline constexpr std::int32_t kAttachedFallback = 2;

// A line of its own per device: processes allocating on different GPUs do not contend.
struct alignas(64) DeviceCounters {
  std::atomic<std::int64_t> current;       // bytes the tree holds now
  std::atomic<std::int64_t> peak;          // highest `current` ever
  std::atomic<std::int64_t> peak_time_ns;  // CLOCK_MONOTONIC when `peak` was last raised
};

struct RunCounters {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t monitor_pid;  // the `gpumem run` that created the file
  // The device view the monitor resolved ordinals with; a process that sees another view
  // (a changed CUDA_VISIBLE_DEVICES) cannot be counted by ordinal and reports a fallback.
  char visible_devices[4096];  // room for 64 MIG UUIDs
  char device_order[32];
  std::atomic<std::int32_t> processes_attached;  // processes that loaded the injection library
  std::atomic<std::int32_t> processes_exact;     // of which the exact source worked
  std::atomic<std::int32_t> processes_fallback;  // of which it did not, or could not be counted
  std::atomic<std::int32_t> slots_exhausted;
  std::atomic<std::int32_t> reason_claimed;  // first fallback reason wins
  char fallback_reason[256];
  DeviceCounters devices[kMaxDevices];
  ProcessSlot processes[kMaxProcesses];
  std::atomic<std::int32_t> record_count;  // may pass kMaxRecords: the rest were not recorded
  AttachRecord records[kMaxRecords];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

// The clock of `peak_time_ns`, shared by the measured processes and the monitor.
inline std::int64_t monotonic_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The clock is read only when the peak rises: reading it on every event would cost more than
// the counting.
inline void raise_peak(DeviceCounters& counters, std::int64_t level) noexcept {
  std::int64_t peak = counters.peak.load(std::memory_order_relaxed);
  while (level > peak) {
    if (counters.peak.compare_exchange_weak(peak, level, std::memory_order_relaxed)) {
      counters.peak_time_ns.store(monotonic_ns(), std::memory_order_relaxed);
      return;
    }
  }
}

// Adds an event's bytes to the tree's level and raises the peak.
inline void add_event(DeviceCounters& counters, std::int64_t delta) noexcept {
  const std::int64_t level = counters.current.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) raise_peak(counters, level);
}

// Takes what a process still holds off the tree's level: the driver frees a process's memory
// when it exits (or when an exec replaces its image), and no free event comes for it.
void give_back(RunCounters& counters, ProcessSlot& slot) noexcept;

// The monitor records the device view it resolves ordinals with (false, and why, if it does not
// fit); a measured process compares its own with it: empty when they agree.
bool record_device_view(RunCounters& counters, std::string* error);
std::string device_view_mismatch(const RunCounters& counters);

// The caller's pid namespace, as slots and records name it.
std::uint64_t own_pid_namespace() noexcept;

// Records how process `pid` (of namespace `pid_namespace`) is measured (`reason` when it is not
// counted exactly).
void record_attach(RunCounters& counters, std::int32_t pid, std::uint64_t pid_namespace, bool exact,
                   const std::string& reason) noexcept;

// Maps the file (created by the monitor, or opened by a measured process); nullptr on failure.
// `create` sizes and initialises it.
RunCounters* map_run_counters(const std::string& path, bool create, std::string* error);
void unmap_run_counters(RunCounters* counters);

}  // namespace gpumem::run
