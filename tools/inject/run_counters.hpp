// The file `gpumem run` shares with the processes of the command it measures. The injection
// library maps it into every CUDA process of the tree and adds each device-memory event to the
// counters, so the peak of the whole tree is exact even when children allocate concurrently.
// Plain atomics on MAP_SHARED memory: lock-free, no syscall per event.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpumem::run {

// The environment variable naming the file, set by `gpumem run` for the command.
inline constexpr const char* kCountersVariable = "GPUMEM_RUN_COUNTERS";

inline constexpr std::uint32_t kCountersMagic = 0x67706d72;  // "gpmr"
inline constexpr std::uint32_t kCountersVersion = 1;
inline constexpr int kMaxDevices = 64;     // CUDA ordinals counted; events beyond are dropped
inline constexpr int kMaxProcesses = 512;  // CUDA processes of one tree tracked at once

// What one process still holds, so the monitor can give back what a process that died without
// freeing (SIGKILL, _exit) held: the driver frees it, and no free event ever comes.
struct ProcessSlot {
  std::atomic<std::int32_t> pid;  // 0: free slot
  std::atomic<std::int64_t> held[kMaxDevices];
};

struct DeviceCounters {
  std::atomic<std::int64_t> current;       // bytes the tree holds now
  std::atomic<std::int64_t> peak;          // highest `current` ever
  std::atomic<std::int64_t> peak_time_ns;  // CLOCK_MONOTONIC when `peak` was last raised
};

struct RunCounters {
  std::uint32_t magic;
  std::uint32_t version;
  // The device view the monitor resolved ordinals with; a process that sees another view
  // (a changed CUDA_VISIBLE_DEVICES) cannot be counted by ordinal and reports a fallback.
  char visible_devices[256];
  char device_order[32];
  std::atomic<std::int32_t> processes_attached;  // processes that loaded the injection library
  std::atomic<std::int32_t> processes_exact;     // of which the exact source worked
  std::atomic<std::int32_t> processes_fallback;  // of which it did not, or could not be counted
  std::atomic<std::int32_t> slots_exhausted;
  std::atomic<std::int32_t> reason_claimed;  // first fallback reason wins
  char fallback_reason[256];
  DeviceCounters devices[kMaxDevices];
  ProcessSlot processes[kMaxProcesses];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

// `now_ns` is only called when the peak rises: reading the clock on every event would cost more
// than the counting.
inline void raise_peak(DeviceCounters& counters, std::int64_t level, std::int64_t (*now_ns)()) {
  std::int64_t peak = counters.peak.load(std::memory_order_relaxed);
  while (level > peak) {
    if (counters.peak.compare_exchange_weak(peak, level, std::memory_order_relaxed)) {
      counters.peak_time_ns.store(now_ns(), std::memory_order_relaxed);
      return;
    }
  }
}

// Adds an event's bytes to the tree's level and raises the peak.
inline void add_event(DeviceCounters& counters, std::int64_t delta, std::int64_t (*now_ns)()) {
  const std::int64_t level = counters.current.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) raise_peak(counters, level, now_ns);
}

// Maps the file (created by the monitor, or opened by a measured process); nullptr on failure.
// `create` sizes and initialises it.
RunCounters* map_run_counters(const std::string& path, bool create, std::string* error);
void unmap_run_counters(RunCounters* counters);

}  // namespace gpumem::run
