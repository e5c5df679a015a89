// The simulated GPUs' state, shared by every process that names the same GPUMEM_SIM_STATE file:
// device descriptions plus per-device, per-process usage slots, kept in an mmap'd file and
// updated with lock-free atomics (a process may die at any instruction; nothing may stay locked).
#pragma once

#include <sys/types.h>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "exit_watch.hpp"
#include "pci.hpp"

namespace gpumem::sim {

inline constexpr unsigned kMaxDevices = 16;
inline constexpr unsigned kMaxSlots = 256;
inline constexpr std::uint64_t kMiB = 1ull << 20;

struct DeviceRecord {
  char name[96];
  char uuid[96];
  PciAddress pci;
  std::uint64_t total_bytes;
  std::uint64_t reserved_bytes;
  std::uint64_t context_bytes;
  int parent;  // -1, or the state index of the GPU this MIG instance belongs to
};

// pid 0: free. The sentinels mark a slot being claimed or reclaimed, which readers skip.
struct UsageSlot {
  std::atomic<std::uint32_t> pid;
  std::atomic<std::uint64_t> start_time;
  std::atomic<std::uint64_t> bytes;
};

struct DeviceUsage {
  std::atomic<std::uint64_t> used;  // sum of the slots' bytes
  // The highest `used` since the state was made: what the device held at its peak, the figure a
  // test asserts gpumem's peaks against (no NVIDIA interface reports it; `gpumem-sim show`).
  std::atomic<std::uint64_t> used_peak;
  std::atomic<std::uint32_t> lost;
  UsageSlot slots[kMaxSlots];
};

struct StateFile {
  std::atomic<std::uint64_t> magic;  // written last: a torn creation is never mistaken for valid
  std::uint32_t layout_version;
  std::uint64_t config_hash;
  char driver_version[80];
  int cuda_driver_version;
  unsigned process_record_bytes;
  std::uint64_t page_bytes;
  std::uint32_t nvml_pid_offset;
  unsigned device_count;
  int cuda_order[kMaxDevices];
  DeviceRecord devices[kMaxDevices];
  DeviceUsage usage[kMaxDevices];
};

struct ProcessUsage {
  std::uint32_t pid;
  std::uint64_t bytes;
};

struct MemoryNumbers {
  std::uint64_t total, reserved, used;  // used excludes reserved
  std::uint64_t free() const { return total - reserved - used; }
};

class SharedState {
 public:
  // This library copy's state, opened (or created) on first use from the environment; nullptr
  // when that fails, with the reason in open_error().
  static SharedState* get() noexcept;
  static const std::string& open_error() noexcept;

  // Rebuilds the state from the config in the environment (default when unset), wiping usage.
  static bool reset(std::string* error) noexcept;

  std::string path() const { return path_; }
  const StateFile& file() const { return *file_; }
  unsigned device_count() const { return file_->device_count; }
  const DeviceRecord& device(unsigned index) const { return file_->devices[index]; }
  bool lost(unsigned index) const {
    return file_->usage[index].lost.load(std::memory_order_relaxed) != 0;
  }
  void set_lost(unsigned index, bool lost) { file_->usage[index].lost.store(lost ? 1 : 0); }

  // Cheap, as the real driver's: it walks no process. Processes that have exited are reclaimed
  // at most every few milliseconds from here, as the kernel reports their exits (ExitWatch: a
  // cost that grows with the processes that exited, not with those alive); where it cannot, by
  // asking about each process (zombies and reused pids then wait for the next process query).
  MemoryNumbers memory(unsigned index);
  // The highest `used` the device reached (DeviceUsage::used_peak).
  std::uint64_t used_peak(unsigned index) const {
    return file_->usage[index].used_peak.load(std::memory_order_acquire);
  }
  // Exact: the device's dead processes (zombies and reused pids too) are reclaimed first (from
  // the kernel's exit reports where it can tell, as memory() does).
  std::vector<ProcessUsage> processes(unsigned index);
  // Every device's dead processes; `thorough` also reads /proc to catch zombies and reused pids.
  void reclaim_dead(bool thorough = true);

  // The calling process's usage. charge fails (false) when the device lacks the free memory.
  bool charge(unsigned index, std::uint64_t bytes);
  void uncharge(unsigned index, std::uint64_t bytes);
  // What the calling process holds on the device.
  std::uint64_t own_bytes(unsigned index);
  // Drops the calling process from the device (its remaining bytes are uncharged).
  void leave(unsigned index);
  // After fork: the child is a new process that owns nothing yet.
  void forget_self();

  SharedState(std::string path, StateFile* file) : path_(std::move(path)), file_(file) {}

 private:
  int own_slot(unsigned index, bool create);
  void maybe_reclaim();
  // `thorough`: a process that cannot be watched is asked about as reclaim_dead_on's would be.
  void reclaim_exited(bool thorough);
  void reclaim_process(const ExitWatch::Process& process);
  void reclaim_dead_on(unsigned first, unsigned last, bool thorough);

  std::string path_;
  StateFile* file_;
  std::atomic<std::int64_t> last_reclaim_ns_{0};
  std::atomic<int> own_slots_[kMaxDevices]{};  // slot index + 1, 0 when none
  // reclaim_exited()'s, used by one thread at a time (`watching_`): the processes it watches and
  // the pid word each slot had when it last looked.
  std::atomic<bool> watching_{false};
  ExitWatch watch_;
  std::uint32_t seen_[kMaxDevices][kMaxSlots]{};
};

// The state file path: GPUMEM_SIM_STATE or ${TMPDIR:-/tmp}/gpumem-sim-<uid>.state.
std::string state_path();

}  // namespace gpumem::sim
