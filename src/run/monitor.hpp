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
#include "gpumem/internal/run_result.hpp"
#include "gpumem/internal/run_timeline.hpp"
#include "gpumem/memory.hpp"
#include "run/holder_history.hpp"
#include "run/pid_mapper.hpp"
#include "run/rank_tracker.hpp"

namespace gpumem::run {

// How a process that loaded the injection library is measured.
struct Attachment {
  bool exact = false;
  std::string reason;  // why not, when not exact
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
  // The exactly counted processes part of whose footprint could not be read (a context on a
  // device with no estimate): why, per process. Complete after stop().
  const std::unordered_map<ProcessKey, std::string, ProcessKeyHash>& unknown_contexts() const {
    return unknown_contexts_;
  }
  // The first value read from the counters that no device can hold (a process of the command
  // wrote it: the file is untrusted input), named; empty when none was. The run is then not exact.
  const std::string& counters_fault() const { return counters_fault_; }

 private:
  void loop(double interval_s);
  // `final`: the last one, after the command and its descendants are gone.
  void sample(bool final = false);
  // What a sample's figures depend on that can be read without NVML's process list: per track
  // the device's used memory and the counters' level, and every used process slot's owner and
  // `calls` word (its generation: bumped at each traced call's ENTER and EXIT). Equal to the
  // last full sample's, none of the figures NVML's list gives has changed (docs/peaks.md).
  struct Fingerprint {
    std::vector<std::int64_t> words;
    bool operator==(const Fingerprint&) const = default;
  };
  Fingerprint fingerprint(std::vector<std::optional<std::int64_t>>& used);
  // The device's used memory as a sample read it: its end, its peak, its timeline row.
  void note_device_used(DeviceTrack& track, std::int64_t used, double time_s);
  // A tick at which nothing changed since the last full sample: the device's used memory and,
  // with a timeline, the last full sample's rows again; no process list, no slot scan.
  void quiet_sample(const std::vector<std::optional<std::int64_t>>& used);
  void give_back_dead_processes();
  // The readings the measured processes asked for (reading_request.cpp), each taken while none
  // of the asking process's calls is in flight; `seen` is the doorbell they rang.
  void answer_requests(std::uint32_t seen);
  struct ReadingRequest {
    run::ProcessSlot* slot;
    std::uint32_t asked;
    ProcessKey key;
    std::uint64_t calls;  // W1
    std::uint32_t answer;
    std::vector<std::int64_t> held;  // per track
  };
  void read_for(std::vector<ReadingRequest>& requests);
  void find_unknown_contexts();
  void join_contexts_to_the_peaks();
  static bool plausible(const DeviceTrack& track, std::int64_t bytes);
  void note_fault(const std::string& fault);
  void wait_until(std::chrono::steady_clock::time_point wake);
  void read_attachments();
  bool read_record(std::int32_t index);
  bool counted_exactly(const ProcessKey& key) const;
  // The shared counters' slot of a measured device (found by its UUID once a measured process
  // named it), -1 while none is.
  int device_slot(std::size_t track);
  void name_devices();
  // An injected process's slot as read before NVML's list: its index, `calls`, what its ledger held
  // and when its process claimed it.
  struct SlotReading {
    std::size_t index = 0;
    std::uint64_t calls = 0;
    std::int64_t held = 0;
    std::int64_t claimed_ns = 0;
    std::int64_t context_ns = 0;  // when its first context was created (0: none yet)
  };
  // Since when a process's context stood on the device, as far as the slot tells: from its first
  // context's creation, else (none yet, or an older library) from its slot's claim.
  static std::int64_t context_since(std::int64_t claimed_ns, std::int64_t context_ns) {
    return context_ns != 0 ? std::max(claimed_ns, context_ns) : claimed_ns;
  }
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
  std::atomic<bool> stop_requested_{false};  // stopping_, for the doorbell's waits
  std::uint32_t doorbell_answered_ = ~0u;    // the doorbell when the requests were last answered
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
  std::vector<std::int32_t> unfinished_records_;  // passed over while being written
  std::int32_t stuck_record_ = -1;                // a record still being written, and since when
  std::int64_t stuck_since_ns_ = 0;
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
  // The processes that asked for readings: when each claimed its slot and gave it back (0: not
  // yet), and how many of their readings found a call in flight.
  struct Asked {
    std::int64_t claimed_ns = 0;  // since when its context stood (context_since)
    std::int64_t released_ns = 0;
    int busy = 0;
  };
  std::unordered_map<ProcessKey, Asked, ProcessKeyHash> asked_;
  std::unordered_map<ProcessKey, std::string, ProcessKeyHash> unknown_contexts_;
  std::string counters_fault_;
  // The last full sample: its fingerprint, when it was taken, and whether everything it listed
  // was settled (every process of the command on the list counted exactly, read quietly, with
  // its context known; no unmatched pid; no peak awaiting a context): only then may the next
  // ticks skip NVML's list while their fingerprint stays the same.
  Fingerprint full_fingerprint_;
  std::int64_t full_ns_ = 0;
  bool settled_ = false;
  // Per track: the last full sample's process rows and tree sum (repeated by quiet samples with
  // a timeline), and the last quiet sample's time (when its processes were last seen).
  std::vector<std::vector<std::pair<unsigned, std::int64_t>>> listed_rows_;
  std::vector<std::int64_t> listed_tree_sum_;
  std::vector<std::int64_t> quiet_seen_ns_;
  // When the process that held `then`'s slot gave it back, if the slot says so still.
  std::optional<std::int64_t> released_ns(const SlotReading& then) const;
};

}  // namespace gpumem::run
