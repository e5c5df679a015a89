#include "run_monitor.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "child_process.hpp"
#include "snapshot.hpp"

namespace gpumem::cli {

using run::monotonic_ns;

const char* to_string(Series series) {
  switch (series) {
    case Series::process:
      return "process";
    case Series::tree:
      return "tree";
    case Series::exact:
      return "exact";
    case Series::device:
      return "device";
  }
  return "?";
}

RunMonitor::RunMonitor(std::vector<DeviceInfo> devices, run::RunCounters* counters,
                       bool keep_timeline)
    : counters_(counters), keep_timeline_(keep_timeline) {
  for (DeviceInfo& info : devices) {
    DeviceTrack track;
    track.handle = gpu_handle(info.ordinal);
    track.info = std::move(info);
    devices_.push_back(std::move(track));
  }
}

RunMonitor::~RunMonitor() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RunMonitor::baseline() {
  for (DeviceTrack& track : devices_) {
    const auto used = gpu_mem_get_used_bytes_fast(track.handle);
    track.device_start = used ? static_cast<std::int64_t>(*used) : 0;
    track.device_peak = track.device_end = track.device_start;
    for (const ProcessMemory& process : device_processes(track.info.ordinal))
      baseline_processes_.push_back(process);
  }
}

double RunMonitor::now_s() const {
  return static_cast<double>(monotonic_ns() - start_ns_) / 1e9;
}

double RunMonitor::elapsed_s() const {
  return static_cast<double>((stop_ns_ != 0 ? stop_ns_ : monotonic_ns()) - start_ns_) / 1e9;
}

void RunMonitor::start(int root, double interval_s) {
  start_ns_ = monotonic_ns();
  pids_ = std::make_unique<PidMapper>(root, static_cast<int>(::getpid()));
  pids_->note_baseline(baseline_processes_);
  // The forwarded signals must reach the thread that waits for the command, not this one.
  const sigset_t forwarded = forwarded_set();
  sigset_t original;
  ::pthread_sigmask(SIG_BLOCK, &forwarded, &original);
  thread_ = std::thread([this, interval_s] { loop(interval_s); });
  ::pthread_sigmask(SIG_SETMASK, &original, nullptr);
}

void RunMonitor::stop() {
  stop_ns_ = monotonic_ns();
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();  // the report should not wait out the rest of an interval
  if (thread_.joinable()) thread_.join();
  if (!pids_) return;
  sample();  // the levels the command left behind
  // A pid that may be the command's and was never matched: the processes cannot all be told
  // apart, and the device's rise over the run is what bounds the command's peak.
  for (DeviceTrack& track : devices_) {
    track.bounded_by_device =
        std::any_of(process_peaks_.begin(), process_peaks_.end(), [&](const ProcessPeak& peak) {
          return peak.device == track.info.ordinal && !peak.key && pids_->maybe_member(peak.pid);
        });
  }
}

void RunMonitor::loop(double interval_s) {
  const auto interval = std::chrono::nanoseconds(static_cast<std::int64_t>(interval_s * 1e9));
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stopping_) {
    lock.unlock();
    sample();
    next += interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // a slow sample delays the next one; it never bunches them
    lock.lock();
    stop_signal_.wait_until(lock, next, [this] { return stopping_; });
  }
}

// A process that died without freeing (killed, or exited through _exit) sent no free events,
// yet the driver released its memory: take what it held off the tree's level.
void RunMonitor::give_back_dead_processes() {
  for (run::ProcessSlot& slot : counters_->processes) {
    const std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    const std::uint64_t pid_namespace = slot.pid_namespace.load(std::memory_order_acquire);
    // A slot being claimed names no namespace yet.
    if (pid <= 0 || pid_namespace == 0 || pids_->alive({pid, pid_namespace})) continue;
    // Held (no claimer takes a slot that is not free) until its namespace is cleared too, so a
    // new owner is never read with the dead one's namespace.
    std::int32_t expected = pid;
    if (!slot.pid.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) continue;
    run::give_back(*counters_, slot);
    slot.pid_namespace.store(0, std::memory_order_relaxed);
    slot.pid.store(0, std::memory_order_release);
  }
}

// Records are appended once each; a record still being written is read at the next sample.
void RunMonitor::read_attachments() {
  const std::int32_t count =
      std::min(counters_->record_count.load(std::memory_order_acquire), run::kMaxRecords);
  while (records_read_ < count) {
    const run::AttachRecord& record = counters_->records[records_read_];
    const std::int32_t state = record.state.load(std::memory_order_acquire);
    if (state == 0) break;
    Attachment& attachment = attachments_[{record.pid.load(), record.pid_namespace.load()}];
    // A process counted exactly once (before an exec, or after) stays so: its events counted.
    if (state == run::kAttachedExact) {
      attachment = {true, {}};
    } else if (!attachment.exact) {
      attachment.reason = std::string(record.reason, strnlen(record.reason, sizeof record.reason));
    }
    ++records_read_;
  }
}

bool RunMonitor::counted_exactly(const ProcessKey& key) const {
  const auto found = attachments_.find(key);
  return found != attachments_.end() && found->second.exact;
}

// What a process's events hold on a device now; nullopt once it gave its slot back (it is
// exiting: what NVML still shows for it is no longer beyond its events).
std::optional<std::int64_t> RunMonitor::events_held(const ProcessKey& key, int ordinal) const {
  if (ordinal < 0 || ordinal >= run::kMaxDevices) return std::nullopt;
  for (const run::ProcessSlot& slot : counters_->processes) {
    if (slot.pid.load(std::memory_order_acquire) == key.pid &&
        slot.pid_namespace.load(std::memory_order_acquire) == key.pid_namespace)
      return slot.held[ordinal].load(std::memory_order_relaxed);
  }
  return std::nullopt;
}

// What each injected process's events hold on the device now (`before` and `after` alike).
std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> RunMonitor::held_now(
    int ordinal) const {
  std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> held;
  if (counters_ == nullptr || ordinal < 0 || ordinal >= run::kMaxDevices) return held;
  for (const run::ProcessSlot& slot : counters_->processes) {
    const std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    const std::uint64_t pid_namespace = slot.pid_namespace.load(std::memory_order_acquire);
    if (pid <= 0 || pid_namespace == 0) continue;
    const std::int64_t bytes = slot.held[ordinal].load();
    held[{pid, pid_namespace}] = {bytes, bytes};
  }
  return held;
}

void RunMonitor::sample() {
  ++samples_;
  if (counters_ != nullptr) {
    read_attachments();
    give_back_dead_processes();
  }
  const double time_s = now_s();
  for (DeviceTrack& track : devices_) {
    const int ordinal = track.info.ordinal;
    if (const auto used = gpu_mem_get_used_bytes_fast(track.handle)) {
      track.device_end = static_cast<std::int64_t>(*used);
      if (track.device_end > track.device_peak) {
        track.device_peak = track.device_end;
        track.device_peak_time_s = time_s;
      }
      if (keep_timeline_)
        timeline_.push_back({time_s, ordinal, Series::device, 0, track.device_end});
    }
    std::int64_t tree_sum = 0;
    std::int64_t escaped_sum = 0;   // of the processes not counted exactly
    std::int64_t context_sum = 0;   // of those counted exactly, beyond their events
    std::int64_t unmapped_sum = 0;  // of the pids that may be the command's, unmatched
    // What the events held before NVML was read and after: an event in between must not pass
    // for context memory.
    std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> held = held_now(ordinal);
    const std::vector<ProcessMemory> listed = device_processes(ordinal);
    for (auto& [key, reading] : held) reading.after = events_held(key, ordinal).value_or(-1);
    pids_->observe(listed, held);
    for (const ProcessMemory& process : listed) {
      const std::optional<Member> member = pids_->member(process.pid);
      if (!member && !pids_->maybe_member(process.pid)) continue;
      // No figure (MIG without privileges): an unmatched pid still says the processes cannot
      // all be told apart.
      if (!process.used_bytes && member) continue;
      const auto bytes = static_cast<std::int64_t>(process.used_bytes.value_or(0));
      if (!member) {
        unmapped_sum += bytes;
      } else {
        tree_sum += bytes;
      }
      if (!member || counters_ == nullptr) {
      } else if (!counted_exactly(member->key)) {
        escaped_sum += bytes;
      } else {
        const auto reading = held.find(member->key);
        const std::optional<std::int64_t> after = events_held(member->key, ordinal);
        // Only a reading no event overlapped tells the context apart from the events; the
        // last such estimate stands in for the others.
        if (reading != held.end() && after && reading->second.before == *after)
          contexts_[member->key][ordinal] = std::max<std::int64_t>(0, bytes - *after);
        const auto& contexts = contexts_[member->key];
        if (const auto known = contexts.find(ordinal); after && known != contexts.end())
          context_sum += known->second;
      }
      if (keep_timeline_)
        timeline_.push_back({time_s, ordinal, Series::process, process.pid, bytes});
      auto known = std::find_if(process_peaks_.begin(), process_peaks_.end(), [&](const auto& p) {
        return p.pid == process.pid && p.device == ordinal;
      });
      if (known == process_peaks_.end()) {
        process_peaks_.push_back({process.pid, std::nullopt, 0, {}, ordinal, bytes, {}});
        known = std::prev(process_peaks_.end());
      } else {
        known->peak = std::max(known->peak, bytes);
      }
      if (member && !known->key) {  // matched now, or first seen
        known->key = member->key;
        known->local_pid = member->local_pid;
        if (member->local_pid > 0) known->name = process_name(member->local_pid);
      }
      // The rank comes from the process's environment, read through its pid in gpumem's
      // namespace: an NVML pid not matched to one of the command's processes has none.
      if (member && member->local_pid > 0)
        known->rank = ranks_.observe(static_cast<unsigned>(member->local_pid), ordinal, bytes);
    }
    track.unmapped_peak = std::max(track.unmapped_peak, unmapped_sum);
    if (keep_timeline_) timeline_.push_back({time_s, ordinal, Series::tree, 0, tree_sum});
    if (tree_sum > track.tree_peak) {
      track.tree_peak = tree_sum;
      track.tree_peak_time_s = time_s;
    }
    if (counters_ != nullptr && ordinal >= 0 && ordinal < run::kMaxDevices) {
      const run::DeviceCounters& exact = counters_->devices[ordinal];
      const std::int64_t peak = exact.peak.load(std::memory_order_relaxed);
      const std::int64_t current = exact.current.load(std::memory_order_relaxed);
      const bool rose = peak > track.exact_peak;
      if (rose) {
        // The peak happened between two samples; the timeline shows it where it happened.
        const double peak_time_s = std::clamp(
            static_cast<double>(exact.peak_time_ns.load() - start_ns_) / 1e9, 0.0, time_s);
        track.exact_peak = peak;
        track.exact_peak_time_s = peak_time_s;
        if (keep_timeline_ && peak != current) {
          timeline_.push_back({peak_time_s, ordinal, Series::exact, 0, peak});
        }
      }
      if (keep_timeline_) timeline_.push_back({time_s, ordinal, Series::exact, 0, current});
      track.context_bytes = std::max(track.context_bytes, context_sum);
      // The events' peak since the last sample, on top of the contexts held now.
      if (rose && peak + context_sum > track.footprint_peak) {
        track.footprint_peak = peak + context_sum;
        track.footprint_peak_time_s = track.exact_peak_time_s;
      }
      if (current + context_sum > track.footprint_peak) {
        track.footprint_peak = current + context_sum;
        track.footprint_peak_time_s = time_s;
      }
      if (current + context_sum + escaped_sum > track.mixed_peak) {
        track.mixed_peak = current + context_sum + escaped_sum;
        track.mixed_peak_time_s = time_s;
      }
    }
  }
  ranks_.end_sample(time_s);
}

}  // namespace gpumem::cli
