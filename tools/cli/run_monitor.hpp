// Samples a running command while `gpumem run` waits for it: per device, the NVML memory used
// on the device, the per-process usage of the command's process tree and, in exact mode, the
// level the injected processes count in the shared counters, found by the device's UUID. With a
// timeline, it also drains the events the processes append, every few milliseconds, into steps
// at event resolution (coalesced into bounded memory, every bucket's extremes kept).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpumem/device.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "gpumem/memory.hpp"
#include "holder_history.hpp"
#include "pid_mapper.hpp"
#include "rank_tracker.hpp"
#include "step_coalescer.hpp"

namespace gpumem::cli {

// What a timeline row is of: one process's sampled usage, the tree's, the exact level at an
// event, the device's used memory, or what the exactly counted processes held beyond their
// events at a sample (their contexts: exact + context is their footprint).
enum class Series { process, tree, exact, device, context };
const char* to_string(Series series);

struct TimelineRow {
  double time_s = 0;
  int device = 0;  // CUDA ordinal
  Series series = Series::device;
  unsigned pid = 0;  // for Series::process
  std::int64_t bytes = 0;
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
  };
  PendingPeak pending;
};

// How a process that loaded the injection library is measured.
struct Attachment {
  bool exact = false;
  std::string reason;  // why not, when not exact
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

class RunMonitor {
 public:
  // `counters` is null in sampled mode. `keep_timeline` records every sample (for --timeline
  // and --plot); the peaks are kept either way.
  RunMonitor(std::vector<DeviceInfo> devices, run::RunCounters* counters, bool keep_timeline);
  ~RunMonitor();

  // Reads the starting levels and sets the timeline's zero; call right before the command starts.
  void baseline();
  // Starts sampling the tree rooted at `root` every `interval_s`.
  void start(int root, double interval_s);
  // Stops sampling after one last sample.
  void stop();

  double elapsed_s() const;
  // When the command started, on the monotonic clock: the timeline's zero.
  std::int64_t start_ns() const { return start_ns_; }
  std::size_t samples() const { return samples_; }
  const std::vector<DeviceTrack>& devices() const { return devices_; }
  // Every sample and, in exact mode, the exact level's steps, in no particular order.
  std::vector<TimelineRow> timeline() const;
  // Timeline events the monitor could not read before they were overwritten (it fell behind
  // by a whole ring); the peaks do not depend on them.
  std::uint64_t timeline_events_lost() const { return ring_reader_.lost; }
  // Devices that measured processes counted events on but gpumem does not measure (outside its
  // own CUDA_VISIBLE_DEVICES, or left out by --device): their UUIDs (hex, no prefix) and peaks.
  struct UnmeasuredDevice {
    std::string uuid;
    std::int64_t peak = 0;
  };
  std::vector<UnmeasuredDevice> unmeasured_devices() const;
  const std::vector<ProcessPeak>& process_peaks() const { return process_peaks_; }
  // The processes that loaded the injection library (read at each sample).
  const std::unordered_map<ProcessKey, Attachment, ProcessKeyHash>& attachments() const {
    return attachments_;
  }
  // How NVML's pids were matched to the command's processes; null before start().
  const PidMapper* pids() const { return pids_.get(); }
  // NVML's process list of every measured device at every sample (and before the start).
  const HolderHistory& holders() const { return holders_; }
  // The ranks of the GPU processes (from their environments) and their peaks per device.
  std::vector<RankPeaks> rank_peaks() const { return ranks_.ranks(); }
  // What NVML showed an exactly counted process holding on a device beyond its events (its
  // context, modules, rounding) around `monotonic_ns`: the last estimate at or before it, else
  // the first after it; nullopt when no reading of it was quiet (docs/peaks.md).
  std::optional<std::int64_t> context_at(const ProcessKey& key, int ordinal,
                                         std::int64_t monotonic_ns) const;

 private:
  void loop(double interval_s);
  // `final`: the last one, after the command and its descendants are gone.
  void sample(bool final = false);
  void give_back_dead_processes();
  void read_attachments();
  bool counted_exactly(const ProcessKey& key) const;
  // The shared counters' slot of a measured device (found by its UUID once a measured process
  // named it), -1 while none is.
  int device_slot(std::size_t track);
  void name_devices();
  // An injected process's slot as read before NVML's list: its index, `calls`, `held` and when
  // its process claimed it.
  struct SlotReading {
    std::size_t index = 0;
    std::uint64_t calls = 0;
    std::int64_t held = 0;
    std::int64_t claimed_ns = 0;
  };
  std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash> read_slots(int slot) const;
  std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> confirm_slots(
      const std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash>& before) const;
  void drain_events(bool final);
  double now_s() const;

  std::vector<DeviceTrack> devices_;
  run::RunCounters* counters_;
  bool keep_timeline_;
  std::int64_t start_ns_ = 0;
  std::int64_t stop_ns_ = 0;
  std::unique_ptr<PidMapper> pids_;
  std::vector<ProcessMemory> baseline_processes_;
  HolderHistory holders_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread thread_;
  std::size_t samples_ = 0;
  std::vector<TimelineRow> timeline_;
  std::vector<std::optional<run::Uuid>> uuids_;  // per track
  std::vector<int> slots_;                       // per track: its device slot, -1 unknown
  std::vector<StepCoalescer> steps_;             // per track: the exact level at each event
  run::RingReader ring_reader_;
  std::uint64_t drained_head_ = 0;  // the ring's head and the time at the loop's last wake
  std::int64_t drained_ns_ = 0;
  std::vector<ProcessPeak> process_peaks_;
  RankTracker ranks_;
  std::unordered_map<ProcessKey, Attachment, ProcessKeyHash> attachments_;
  std::int32_t records_read_ = 0;
  // Per process and device ordinal: NVML's figure beyond the events.
  std::unordered_map<ProcessKey, std::unordered_map<int, std::int64_t>, ProcessKeyHash> contexts_;
  // The same, each estimate that changed it with when it was read (monotonic ns), in time order.
  using ContextSteps = std::vector<std::pair<std::int64_t, std::int64_t>>;
  std::unordered_map<ProcessKey, std::unordered_map<int, ContextSteps>, ProcessKeyHash>
      context_history_;
  // Per track: the contexts summed at the last sample, per process, and their slots then.
  std::vector<std::unordered_map<ProcessKey, std::int64_t, ProcessKeyHash>> summed_contexts_;
  std::vector<std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash>> summed_slots_;
  // When each exactly counted process claimed its slot, was last seen and gave it back (0:
  // unknown), on the monotonic clock: the span its contexts count over in the timeline.
  struct Lifetime {
    std::int64_t claimed_ns = 0;
    std::int64_t last_seen_ns = 0;
    std::int64_t released_ns = 0;
  };
  std::unordered_map<ProcessKey, Lifetime, ProcessKeyHash> lifetimes_;
  // When the process that held `then`'s slot gave it back, if the slot says so still.
  std::optional<std::int64_t> released_ns(const SlotReading& then) const;
};

}  // namespace gpumem::cli
