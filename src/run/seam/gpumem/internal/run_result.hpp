// What a `gpumem run` measured, decided in one place (src/run): per device the peaks each way of
// measuring gave and the headline figure (command_peak), per process and rank what it held and
// how it was measured, the run's mode, the timeline. `gpumem run` renders it (the summary, its
// JSON, the plot), and its attribution document is made from the same monitor.
//
// A seam (src/run implements it): the engine measures, the gpumem command shows.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/device.hpp"
#include "gpumem/internal/run_rank.hpp"
#include "gpumem/internal/run_timeline.hpp"
#include "gpumem/memory.hpp"

#pragma GCC visibility push(default)

namespace gpumem::run {

// A process as it names itself: its pid in its own pid namespace, and that namespace's inode
// (kUnknownNamespace when unreadable).
struct ProcessKey {
  std::int32_t pid = 0;
  std::uint64_t pid_namespace = 0;
  friend bool operator==(const ProcessKey&, const ProcessKey&) = default;
};
struct ProcessKeyHash {
  std::size_t operator()(const ProcessKey& key) const noexcept {
    return std::hash<std::uint64_t>()(key.pid_namespace * 0x9E3779B97F4A7C15ull ^
                                      static_cast<std::uint32_t>(key.pid));
  }
};

struct RankDevicePeak {
  int device = 0;  // CUDA ordinal, as gpumem run sees it
  std::int64_t peak = 0;
  double peak_time_s = 0;
};

// One rank: the processes that gave it (a worker and any of its children that used a GPU, or
// a restarted worker), and its peak per device.
struct RankPeaks {
  RankInfo info;
  std::vector<unsigned> pids;
  std::vector<RankDevicePeak> devices;
};

struct DeviceTrack {
  DeviceInfo info;
  GpuHandle handle;
  std::int64_t device_start = 0;  // NVML used when the command started
  std::int64_t device_peak = 0;
  double device_peak_time_s = 0;
  std::int64_t device_end = 0;
  std::int64_t tree_peak = 0;  // the highest sum of the tree's per-process usage
  double tree_peak_time_s = 0;
  std::int64_t exact_peak = 0;  // the events' peak, from the shared counters
  double exact_peak_time_s = 0;
  // The events' bracketed peak (run_counters.hpp): allocations counted from their ENTER, frees
  // until their EXIT. `exact_peak` is never above what the device held of the events, this never
  // below it; the two differ only where calls that allocated and freed were in flight together
  // around the peak, in an order the driver does not tell (docs/peaks.md).
  std::int64_t exact_peak_upper = 0;
  // What NVML shows the exactly counted processes holding beyond their events (contexts,
  // modules, rounding), at most: the measured processes make no NVML call, so the monitor
  // reconciles the footprint for them.
  std::int64_t context_bytes = 0;
  // The highest exact level plus `context_bytes`: the process footprint, exactly counted.
  std::int64_t footprint_peak = 0;
  double footprint_peak_time_s = 0;
  // The highest sum, at a sample, of the exact level and the sampled usage of the tree's
  // processes that were not counted exactly (a mixed run).
  std::int64_t mixed_peak = 0;
  double mixed_peak_time_s = 0;
  // When NVML's pids are another namespace's: the highest sum, at a sample, of what the pids that
  // may be the command's but matched none of its processes held. When any stays unmatched, the
  // command's processes cannot all be told apart, and the device's rise bounds the peak.
  std::int64_t unmapped_peak = 0;
  bool bounded_by_device = false;
  // The events' highest peak while a process that was there when it was made had no context
  // estimate yet (every reading of it so far overlapped one of its calls): its first estimate,
  // once a quiet reading gives it, still joins that peak's footprint.
  struct PendingPeak {
    std::int64_t bytes = 0;  // the events' peak plus the contexts it has been given
    double time_s = 0;
    std::vector<ProcessKey> awaiting;
    std::int64_t peak_ns = 0;  // when the events' peak was made (monotonic)
  };
  PendingPeak pending;
};

struct ProcessPeak {
  unsigned pid = 0;               // as NVML lists it
  std::optional<ProcessKey> key;  // the command's process behind it; none when unmatched
  int local_pid = 0;              // its pid in gpumem's namespace, 0 when unknown
  std::string name;
  int device = 0;
  std::int64_t peak = 0;
  RankInfo rank;  // from its environment
};

// How the command ended: its status, or 128 + signal when a signal killed it.
struct ChildExit {
  int exit_code = 0;
  int signal = 0;  // the signal that killed it, 0 when it exited
};

enum class Mode { automatic, exact, sampled };
// How the run was measured: every GPU process exactly, some of them, or none.
enum class Measured { exact, mixed, sampled };
const char* to_string(Measured measured);

// One GPU process of the command on one device, and how it was measured.
struct ProcessReport {
  ProcessPeak peak;
  bool exact = false;
  std::string reason;  // why not exact
};

// A device that measured processes counted events on but gpumem does not measure (outside its
// own CUDA_VISIBLE_DEVICES, or left out by --device): its UUID (hex, no prefix) and peak.
struct UnmeasuredDevice {
  std::string uuid;
  std::int64_t peak = 0;
};

struct RunResult {
  // What gpumem run was asked and how the command ran (filled by the command that launched it).
  std::vector<std::string> command;
  ChildExit exit;
  Mode requested = Mode::automatic;
  double interval_s = 0;
  double descendants_wait_s = 0;   // the bound; 0 when not waited for
  bool descendants_waited = true;  // false: --no-wait-descendants
  // Adopted descendants still running at the bound, or, not waited for, when the command exited.
  std::vector<int> descendants_running;
  std::string no_gpu_reason;  // no GPU to measure: why (as `gpumem list` says it)
  bool no_gpu = false;
  double start_unix_s = 0;  // wall clock when the command started, and when gpumem
  double end_unix_s = 0;    // stopped measuring it (Unix time, seconds)
  std::string host;         // the node gpumem ran on (--host, else its host name)
  RankInfo own_rank;        // from gpumem's own environment (one per node under srun)

  // What the engine measured (Engine::finish).
  Measured measured = Measured::sampled;
  std::string fallback_reason;  // why not every process was exact, when exact was tried
  int exact_processes = 0;      // processes that counted their events
  int escaped_processes = 0;    // GPU processes (or attached ones) not counted exactly
  double elapsed_s = 0;
  std::size_t samples = 0;
  std::vector<DeviceTrack> devices;
  std::vector<ProcessReport> processes;
  // NVML's pids are another namespace's (gpumem runs in a container), and why; how many of them
  // were matched to the command's injected processes, and how many stayed unmatched.
  bool nvml_pids_foreign = false;
  std::string pid_namespace_reason;
  std::size_t matched_pids = 0;
  int unmapped_processes = 0;
  bool nested_namespaces = false;  // some of the command's processes ran in a nested namespace
  std::vector<RankPeaks> ranks;    // the GPU processes' ranks, from their environments
  std::vector<UnmeasuredDevice> unmeasured_devices;
  // Every sample and, in exact mode, the exact level's steps, in no particular order; empty
  // unless a timeline was kept.
  std::vector<TimelineRow> timeline;
  // Timeline events the monitor could not read before they were overwritten (it fell behind
  // by a whole ring); the peaks do not depend on them.
  std::uint64_t timeline_events_lost = 0;
};

// The command's peak on a device, in the mode that measured it: the run's headline figure, the
// one every view of the run shows.
std::int64_t command_peak(const RunResult& result, const DeviceTrack& device);
// Whether the command did anything on the device: any of the figures measured for it above
// zero. The views show a device only when it was used (the summary's rows, the plot's panels).
bool device_used(const RunResult& result, const DeviceTrack& device);
// The most the command's peak on the device may have been, where the events bound it to a range
// (exact_peak_upper above exact_peak, in an exact run): command_peak plus the width of the events'
// range, the contexts being those that stood at the events' peak. nullopt where command_peak is
// the peak to the byte, or where the run measured no upper bound (mixed, sampled).
std::optional<std::int64_t> command_peak_at_most(const RunResult& result,
                                                 const DeviceTrack& device);
// When it happened, in seconds since the command started.
double command_peak_time(const RunResult& result, const DeviceTrack& device);
// How far the device's used memory rose over the run (peak minus start).
std::int64_t device_rise(const DeviceTrack& device);

// A rank's peak on one device, as every view of the run gives it.
struct RankDeviceRow {
  const DeviceTrack* device = nullptr;  // in the RunResult it was decided from
  std::int64_t peak = 0;
  // Exact when the rank's processes were the command's only ones on the device and all of
  // them were counted exactly: the device's exact peak (command_peak) is then the rank's own.
  // Otherwise the highest sum at a sample of NVML's figures for the rank's processes.
  bool exact = false;
};

// A rank's peaks, per device, and which is its highest.
struct RankRow {
  RankInfo info;
  std::vector<unsigned> pids;
  std::vector<RankDeviceRow> devices;  // in CUDA ordinal order
  int highest = -1;                    // index in `devices` of the rank's peak (-1: none)
};

// Each rank of result.ranks, in that order: whether its peak on each device is exact, and then
// lifted to the command's peak there, decided once for the summary and the JSON.
std::vector<RankRow> rank_rows(const RunResult& result);

}  // namespace gpumem::run

#pragma GCC visibility pop
