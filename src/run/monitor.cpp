#include "run/monitor.hpp"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "gpumem/internal/device_uuid.hpp"
#include "gpumem/internal/process_list.hpp"
#include "gpumem/internal/procfs.hpp"

namespace gpumem::run {

using run::monotonic_ns;

namespace {

// The timeline ring is drained at every sample and, when events come faster than a quarter of
// the ring per interval, in between: never more often than every 2 ms (at a million events a
// second the ring holds 65 ms).
constexpr std::int64_t kMinDrainPeriodNs = 2'000'000;
// How long a requested reading waits for the asking process's calls in flight to end (its other
// threads wait at its gate meanwhile): calls end, so this bounds only a call that blocks.
constexpr std::int64_t kQuietWaitNs = 200'000'000;
// More than any device holds: a ledger beyond it was forged or torn.
constexpr std::int64_t kMostBytes = std::int64_t{1} << 50;
// While nothing a sample can read without NVML's process list changes, the list is still read
// this often: a change no process traced and the device's used memory did not show (two
// processes' contexts moving by the same bytes between two ticks, in opposite directions) is
// seen within it, and dead processes that held nothing give their slots back within it.
constexpr std::int64_t kFullSampleEveryNs = 1'000'000'000;

}  // namespace

// Whether a level read from the counters can be a device's: not negative, not above its memory.
bool RunMonitor::plausible(const DeviceTrack& track, std::int64_t bytes) {
  const auto total = static_cast<std::int64_t>(track.info.memory.total);
  return bytes >= 0 && bytes <= (total > 0 ? total : kMostBytes);
}

namespace {

constexpr const char* kRewritten = "the counters were overwritten by a process of the command";

bool header_rewritten(const run::RunCounters* counters) {
  return counters != nullptr &&
         (counters->magic != run::kCountersMagic || counters->version != run::kCountersVersion);
}

}  // namespace

void RunMonitor::note_fault(const std::string& fault) {
  if (!counters_fault_.empty()) return;
  // A rewritten header is the cause of what else was rewritten with it (a ledger that then goes
  // below zero, a level): it is named whichever of its effects is read first.
  counters_fault_ = header_rewritten(counters_) ? kRewritten : fault;
}

RunMonitor::RunMonitor(std::vector<DeviceInfo> devices, run::RunCounters* counters,
                       bool keep_timeline)
    : counters_(counters), keep_timeline_(keep_timeline) {
  for (DeviceInfo& info : devices) {
    DeviceTrack track;
    track.handle = gpu_handle(info.device);
    uuids_.push_back(run::parse_uuid(info.uuid));
    track.info = std::move(info);
    devices_.push_back(std::move(track));
  }
  slots_.assign(devices_.size(), -1);
  steps_.assign(devices_.size(), StepCoalescer());
  summed_contexts_.resize(devices_.size());
  summed_slots_.resize(devices_.size());
  listed_rows_.resize(devices_.size());
  listed_tree_sum_.assign(devices_.size(), 0);
  quiet_seen_ns_.assign(devices_.size(), 0);
  // Before the command starts: its processes read it once, when they attach.
  if (counters_ != nullptr) {
    counters_->timeline = keep_timeline_ ? 1 : 0;
    name_devices();
  }
}

// Names a slot for each measured device, and counts the MIG devices of a measured GPU in its
// slot (unless gpumem measures that MIG device itself): the GPU's figures then sum every
// process on it, whichever of its MIG devices each one used. Before the command starts.
void RunMonitor::name_devices() {
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    if (uuids_[track]) slots_[track] = run::find_or_claim_device(*counters_, *uuids_[track]);
  }
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    if (slots_[track] < 0) continue;
    for (const std::string& text : mig_device_uuids(devices_[track].info.device)) {
      const std::optional<run::Uuid> mig = run::parse_uuid(text);
      if (!mig || std::find(uuids_.begin(), uuids_.end(), mig) != uuids_.end()) continue;
      run::add_alias(*counters_, *mig, slots_[track]);
    }
  }
}

RunMonitor::~RunMonitor() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_requested_.store(true);
  stop_signal_.notify_all();
  if (counters_ != nullptr) run::ring_doorbell(*counters_);
  if (thread_.joinable()) thread_.join();
}

void RunMonitor::baseline() {
  for (DeviceTrack& track : devices_) {
    const auto used = gpu_mem_get_used_bytes_fast(track.handle);
    track.device_start = used ? static_cast<std::int64_t>(*used) : 0;
    track.device_peak = track.device_end = track.device_start;
    const auto read = detail::device_process_list(track.info.device);
    const std::vector<ProcessMemory> listed = read.value_or(std::vector<ProcessMemory>{});
    // A failed reading is no list: it must not pass for "nobody else held the device".
    if (read) holders_.add(track.info.device, monotonic_ns(), listed);
    baseline_processes_.insert(baseline_processes_.end(), listed.begin(), listed.end());
  }
  // The timeline's zero: right before the command starts. Not at start(), after the fork: a
  // loaded machine may run the command for milliseconds first, and its first events would come
  // before the zero (a snapshot "at -12 ms").
  start_ns_ = monotonic_ns();
}

double RunMonitor::now_s() const {
  return static_cast<double>(monotonic_ns() - start_ns_) / 1e9;
}

double RunMonitor::elapsed_s() const {
  return static_cast<double>((stop_ns_ != 0 ? stop_ns_ : monotonic_ns()) - start_ns_) / 1e9;
}

void RunMonitor::start(int root, double interval_s) {
  if (start_ns_ == 0) start_ns_ = monotonic_ns();  // no baseline()
  pids_ = std::make_unique<PidMapper>(root, static_cast<int>(::getpid()));
  pids_->note_baseline(baseline_processes_);
  // Signals sent to gpumem (the ones it forwards to the command among them) must reach the thread
  // that waits for the command, never this one.
  sigset_t every;
  ::sigfillset(&every);
  sigset_t original;
  ::pthread_sigmask(SIG_BLOCK, &every, &original);
  thread_ = std::thread([this, interval_s] { loop(interval_s); });
  ::pthread_sigmask(SIG_SETMASK, &original, nullptr);
}

void RunMonitor::stop() {
  stop_ns_ = monotonic_ns();
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_requested_.store(true);
  stop_signal_.notify_all();  // the report should not wait out the rest of an interval
  if (counters_ != nullptr) run::ring_doorbell(*counters_);
  if (thread_.joinable()) thread_.join();
  if (!pids_) return;
  if (counters_ != nullptr) answer_requests(counters_->doorbell.load());
  sample(true);  // the levels the command left behind
  if (counters_ != nullptr) join_contexts_to_the_peaks();
  // A pid that may be the command's and was never matched: the processes cannot all be told
  // apart, and the device's rise over the run is what bounds the command's peak.
  for (DeviceTrack& track : devices_) {
    track.bounded_by_device =
        std::any_of(process_peaks_.begin(), process_peaks_.end(), [&](const ProcessPeak& peak) {
          return peak.device == track.info.device && !peak.key && pids_->maybe_member(peak.pid);
        });
  }
  if (counters_ != nullptr) find_unknown_contexts();
}

void RunMonitor::loop(double interval_s) {
  const auto interval = std::chrono::nanoseconds(static_cast<std::int64_t>(interval_s * 1e9));
  const bool draining = counters_ != nullptr && keep_timeline_;
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stopping_) {
    lock.unlock();
    if (counters_ != nullptr) {
      // Loaded before the requests are read: a request made after this rings a bell not yet seen.
      const std::uint32_t seen = counters_->doorbell.load(std::memory_order_seq_cst);
      // Once the counters were found rewritten, the bell may have been rewound to the value last
      // answered: each wake then looks at every slot for a request, so none waits out its 2 s.
      if (seen != doorbell_answered_ || !counters_fault_.empty()) answer_requests(seen);
    }
    if (std::chrono::steady_clock::now() >= next) {
      sample();
      next += interval;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now;  // a slow sample delays the next one; it never bunches them
    } else {
      drain_events(false);
    }
    auto wake = next;
    if (draining) {
      // A quarter of the ring at the rate events came since the last wake.
      const std::int64_t now_ns = monotonic_ns();
      const std::uint64_t head = counters_->ring.head.load(std::memory_order_relaxed);
      const double rate = static_cast<double>(head - drained_head_) /
                          static_cast<double>(std::max<std::int64_t>(now_ns - drained_ns_, 1));
      drained_head_ = head;
      drained_ns_ = now_ns;
      const double period_ns =
          rate > 0 ? static_cast<double>(run::kEventRingSize / 4) / rate : 1e18;
      if (period_ns < static_cast<double>(interval.count())) {
        wake = std::min(wake, std::chrono::steady_clock::now() +
                                  std::chrono::nanoseconds(std::max(
                                      kMinDrainPeriodNs, static_cast<std::int64_t>(period_ns))));
      }
    }
    wait_until(wake);
    lock.lock();
  }
}

// Until `wake`, stop, or (exact mode) a process asking for a reading.
void RunMonitor::wait_until(std::chrono::steady_clock::time_point wake) {
  if (counters_ == nullptr) {
    std::unique_lock<std::mutex> lock(stop_mutex_);
    stop_signal_.wait_until(lock, wake, [this] { return stopping_; });
    return;
  }
  const auto left = wake - std::chrono::steady_clock::now();
  if (left.count() <= 0 || stop_requested_.load()) return;
  if (counters_->doorbell.load(std::memory_order_seq_cst) != doorbell_answered_) return;
  run::wait_for_doorbell(*counters_, doorbell_answered_,
                         std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
}

void RunMonitor::answer_requests(std::uint32_t seen) {
  doorbell_answered_ = seen;
  read_attachments();
  std::vector<ReadingRequest> requests;
  const std::size_t used = run::process_slots_used(*counters_);
  for (std::size_t index = 0; index < used; ++index) {
    run::ProcessSlot& slot = counters_->processes[index];
    const std::uint32_t asked = slot.asked.load(std::memory_order_acquire);
    if (asked == slot.answered.load(std::memory_order_acquire)) continue;
    const std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    const std::uint64_t pid_namespace = slot.pid_namespace.load(std::memory_order_acquire);
    if (pid <= 0 || pid_namespace == 0 || !pids_) {
      run::answer_reading(slot, asked, run::kAnswerBusy);
      continue;
    }
    requests.push_back({&slot, asked, {pid, pid_namespace}, 0, run::kAnswerBusy, {}});
  }
  if (requests.empty()) return;
  read_for(requests);
  for (const ReadingRequest& request : requests)
    run::answer_reading(*request.slot, request.asked, request.answer);
}

// One reading for every process that asked, together: NVML's figure for each on each measured
// device, less what its events hold there, while none of its calls is in flight (its other
// threads wait at its gate; the one that asked is in none). One NVML list per device whatever
// the number of requests. The device-used figure is read beside it.
void RunMonitor::read_for(std::vector<ReadingRequest>& requests) {
  const std::int64_t deadline = monotonic_ns() + kQuietWaitNs;
  std::vector<ReadingRequest*> quiet;
  for (ReadingRequest& request : requests) {
    std::uint64_t calls = run::read_calls(*request.slot);
    while (!run::quiet_calls(calls) && monotonic_ns() <= deadline) {
      ::sched_yield();
      calls = run::read_calls(*request.slot);
    }
    if (!run::quiet_calls(calls)) {
      ++asked_[request.key].busy;
      continue;
    }
    request.calls = calls;
    request.held.assign(devices_.size(), 0);
    bool plausible_ledger = true;
    for (std::size_t track = 0; track < devices_.size(); ++track) {
      if (const int device = device_slot(track); device >= 0)
        request.held[track] = run::ledger_bytes(*request.slot, device);
      if (!plausible(devices_[track], request.held[track])) {
        note_fault("process " + std::to_string(request.key.pid) +
                   "'s ledger in the counters holds " + std::to_string(request.held[track]) +
                   " B: forged or torn, ignored");
        plausible_ledger = false;
      }
    }
    if (plausible_ledger) quiet.push_back(&request);
  }
  if (quiet.empty()) return;
  std::vector<std::optional<std::vector<ProcessMemory>>> lists;
  for (const DeviceTrack& track : devices_)
    lists.push_back(detail::device_process_list(track.info.device));
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const std::int64_t now = monotonic_ns();
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    DeviceTrack& device = devices_[track];
    if (const auto used = gpu_mem_get_used_bytes_fast(device.handle)) {
      device.device_end = static_cast<std::int64_t>(*used);
      if (device.device_end > device.device_peak) {
        device.device_peak = device.device_end;
        device.device_peak_time_s = now_s();
      }
    }
  }
  // NVML's figure per process and track.
  std::unordered_map<ProcessKey, std::vector<std::optional<std::int64_t>>, ProcessKeyHash> figures;
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    if (!lists[track]) continue;
    for (const ProcessMemory& process : *lists[track]) {
      const std::optional<Member> member = pids_->member(process.pid);
      if (!member || !process.used_bytes) continue;
      auto& figure = figures[member->key];
      figure.resize(devices_.size());
      figure[track] = static_cast<std::int64_t>(*process.used_bytes);
    }
  }
  for (ReadingRequest* request : quiet) {
    run::ProcessSlot& slot = *request->slot;
    Asked& asked = asked_[request->key];
    if (run::read_calls(slot) != request->calls ||
        slot.pid.load(std::memory_order_acquire) != request->key.pid) {
      ++asked.busy;
      continue;
    }
    asked.claimed_ns = context_since(slot.claimed_ns.load(std::memory_order_relaxed),
                                     slot.context_ns.load(std::memory_order_acquire));
    const bool exiting = slot.asked_kind.load(std::memory_order_relaxed) == run::kAskedAtExit;
    if (exiting) asked.released_ns = now;
    const auto figure = figures.find(request->key);
    bool listed = false;
    for (std::size_t track = 0; figure != figures.end() && track < devices_.size(); ++track) {
      if (!figure->second[track]) continue;
      listed = true;
      const std::int64_t context =
          std::max<std::int64_t>(0, *figure->second[track] - request->held[track]);
      const int ordinal = devices_[track].info.device;
      contexts_[request->key][ordinal] = context;
      ContextSteps& steps = context_history_[request->key][ordinal];
      if (steps.empty() || steps.back().second != context) steps.emplace_back(now, context);
    }
    // Not listed (its pid not matched yet, or NVML's list unreadable): it asks again.
    if (listed || exiting) {
      request->answer = run::kAnswerRead;
    }  // else: on no measured device's list (yet): it asks again, and no context is missing
  }
}

// Once every process has told its lifetime (its readings at its context's creation and at its
// exit): the events' highest peak on each device stood on the context of every process counted
// exactly that had claimed its slot by then and not yet given it back, whether or not a sample
// saw it there.
void RunMonitor::join_contexts_to_the_peaks() {
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    DeviceTrack& track = devices_[index];
    const int slot = device_slot(index);
    if (slot < 0 || track.exact_peak <= 0) continue;
    const std::int64_t peak_ns = counters_->devices[slot].peak_time_ns.load();
    std::int64_t contexts = 0;
    for (const auto& [key, asked] : asked_) {
      if (!counted_exactly(key) || asked.claimed_ns == 0 || asked.claimed_ns > peak_ns ||
          (asked.released_ns != 0 && asked.released_ns < peak_ns))
        continue;
      if (const auto context = context_at(key, track.info.device, peak_ns)) contexts += *context;
    }
    if (track.exact_peak + contexts > track.footprint_peak) {
      track.footprint_peak = track.exact_peak + contexts;
      track.footprint_peak_time_s = track.exact_peak_time_s;
    }
  }
}

// An exactly counted process with a device it held memory on (NVML listed it there) but no
// estimate of its context there, or one whose own readings all found a call in flight: its
// footprint lacks that part, and the run says so.
void RunMonitor::find_unknown_contexts() {
  for (const ProcessPeak& peak : process_peaks_) {
    if (!peak.key || !counted_exactly(*peak.key)) continue;
    const auto known = contexts_.find(*peak.key);
    if (known != contexts_.end() && known->second.contains(peak.device)) continue;
    // Where the device's rise bounds the peak (pids that could not all be told apart), that rise
    // holds every context on it.
    if (std::any_of(devices_.begin(), devices_.end(), [&](const DeviceTrack& track) {
          return track.info.device == peak.device && track.bounded_by_device;
        }))
      continue;
    unknown_contexts_.emplace(*peak.key,
                              "its context on GPU " + std::to_string(peak.device) +
                                  " could not be read: no reading of NVML's figure for it was "
                                  "taken while none of its calls was in flight");
  }
  for (const auto& [key, asked] : asked_) {
    if (asked.busy == 0 || !counted_exactly(key) || contexts_.contains(key)) continue;
    unknown_contexts_.emplace(key,
                              "its context could not be read: a call of it stayed in flight "
                              "through each reading it asked for");
  }
}

int RunMonitor::device_slot(std::size_t track) {
  if (slots_[track] < 0 && uuids_[track])
    slots_[track] = run::find_device(*counters_, *uuids_[track]);
  return slots_[track];
}

// The events the measured processes appended since the last drain, into each device's steps.
void RunMonitor::drain_events(bool final) {
  if (counters_ == nullptr || !keep_timeline_) return;
  int track_of_slot[run::kMaxDevices];
  std::fill(std::begin(track_of_slot), std::end(track_of_slot), -1);
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    if (const int slot = device_slot(track); slot >= 0)
      track_of_slot[slot] = static_cast<int>(track);
  }
  ring_reader_.drain(counters_->ring, final,
                     [&](int slot, std::int64_t time_ns, std::int64_t level) {
                       if (const int track = track_of_slot[slot]; track >= 0)
                         steps_[static_cast<std::size_t>(track)].add(time_ns - start_ns_, level);
                     });
}

std::optional<std::int64_t> RunMonitor::context_at(const ProcessKey& key, int ordinal,
                                                   std::int64_t monotonic_ns) const {
  const auto process = context_history_.find(key);
  if (process == context_history_.end()) return std::nullopt;
  const auto device = process->second.find(ordinal);
  if (device == process->second.end() || device->second.empty()) return std::nullopt;
  const ContextSteps& steps = device->second;
  // The first estimate read after the moment; the one before it, if any, stood at the moment.
  const auto after =
      std::upper_bound(steps.begin(), steps.end(), monotonic_ns,
                       [](std::int64_t at, const std::pair<std::int64_t, std::int64_t>& step) {
                         return at < step.first;
                       });
  return after == steps.begin() ? after->second : std::prev(after)->second;
}

std::vector<UnmeasuredDevice> RunMonitor::unmeasured_devices() const {
  std::vector<UnmeasuredDevice> found;
  if (counters_ == nullptr) return found;
  for (int slot = 0; slot < run::kMaxDevices; ++slot) {
    const run::DeviceCounters& device = counters_->devices[slot];
    if (device.state.load(std::memory_order_acquire) != run::kDeviceNamed) continue;
    const std::int64_t peak = device.peak.load(std::memory_order_relaxed);
    if (peak <= 0 || std::find(slots_.begin(), slots_.end(), slot) != slots_.end()) continue;
    std::array<unsigned char, 16> bytes{};
    std::memcpy(bytes.data(), device.uuid, bytes.size());
    found.push_back({driver::uuid_text(bytes), peak});
  }
  return found;
}

std::vector<TimelineRow> RunMonitor::timeline() const {
  std::vector<TimelineRow> rows = timeline_;
  if (counters_ == nullptr || !keep_timeline_) return rows;
  for (std::size_t track = 0; track < devices_.size(); ++track) {
    const int ordinal = devices_[track].info.device;
    rows.push_back({0.0, ordinal, Series::exact, 0, 0});  // nothing is counted before the start
    for (const Step& step : steps_[track].steps())
      rows.push_back(
          {static_cast<double>(step.time_ns) / 1e9, ordinal, Series::exact, 0, step.level});
  }
  // The contexts, as the peaks count them: each process's first estimate from when it claimed
  // its slot (its context was there before a quiet reading told it apart), each later one from
  // when it was read, and nothing from when it gave its slot back (else from the last sample
  // that saw it).
  const auto run_time = [&](std::int64_t ns) {
    return std::max(0.0, static_cast<double>(ns - start_ns_) / 1e9);
  };
  for (const DeviceTrack& device : devices_) {
    const int ordinal = device.info.device;
    std::vector<std::pair<double, std::int64_t>> changes;  // (time, change of the sum)
    for (const auto& [key, per_device] : context_history_) {
      const auto history = per_device.find(ordinal);
      if (history == per_device.end() || history->second.empty()) continue;
      const auto lifetime = lifetimes_.find(key);
      std::int64_t level = 0;
      bool first = true;
      for (const auto& [ns, bytes] : history->second) {
        const std::int64_t from =
            first && lifetime != lifetimes_.end() && lifetime->second.claimed_ns != 0
                ? std::min(ns, lifetime->second.claimed_ns)
                : ns;
        changes.emplace_back(run_time(from), bytes - level);
        level = bytes;
        first = false;
      }
      if (lifetime != lifetimes_.end()) {
        const std::int64_t end = lifetime->second.released_ns != 0 ? lifetime->second.released_ns
                                                                   : lifetime->second.last_seen_ns;
        if (end != 0) changes.emplace_back(run_time(end), -level);
      }
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::int64_t sum = 0;
    rows.push_back({0.0, ordinal, Series::context, 0, 0});
    for (const auto& [time, change] : changes) {
      sum += change;
      rows.push_back({time, ordinal, Series::context, 0, sum});
    }
  }
  return rows;
}

std::optional<std::int64_t> RunMonitor::released_ns(const SlotReading& then) const {
  const run::ProcessSlot& gone = counters_->processes[then.index];
  const std::int64_t released = gone.released_ns.load(std::memory_order_acquire);
  if (gone.claimed_ns.load(std::memory_order_relaxed) != then.claimed_ns || released == 0)
    return std::nullopt;  // its slot has had another owner since, or was given back for it
  return released;
}

// A process that died without freeing (killed, or exited through _exit) sent no free events,
// yet the driver released its memory: take what it held off the tree's level.
void RunMonitor::give_back_dead_processes() {
  const std::size_t used = run::process_slots_used(*counters_);
  for (std::size_t index = 0; index < used; ++index) {
    run::ProcessSlot& slot = counters_->processes[index];
    const std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    const std::uint64_t pid_namespace = slot.pid_namespace.load(std::memory_order_acquire);
    // A slot being claimed names no namespace yet.
    if (pid <= 0 || pid_namespace == 0 || pids_->alive({pid, pid_namespace})) continue;
    // Held (no claimer takes a slot that is not free) until its namespace is cleared too, so a
    // new owner is never read with the dead one's namespace.
    std::int32_t expected = pid;
    if (!slot.pid.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) continue;
    // Its context went with it, some time before now.
    if (const auto asked = asked_.find({pid, pid_namespace});
        asked != asked_.end() && asked->second.released_ns == 0)
      asked->second.released_ns = monotonic_ns();
    run::give_back(*counters_, slot);
    slot.pid_namespace.store(0, std::memory_order_relaxed);
    slot.pid.store(0, std::memory_order_release);
  }
}

// Records are appended once each; a record still being written is read at the next sample.
void RunMonitor::read_attachments() {
  // Records passed over while being written: read once written.
  std::erase_if(unfinished_records_, [this](std::int32_t index) { return read_record(index); });
  const std::int32_t count =
      std::min(counters_->record_count.load(std::memory_order_acquire), run::kMaxRecords);
  while (records_read_ < count) {
    if (!read_record(records_read_)) {
      // Being written (a few instructions, or longer for a writer the machine's load keeps
      // waiting), or left so by a writer that died or a process that wrote there: passed over
      // after 100 ms, so that the records after it are read, and read whenever it is written.
      const std::int64_t now = monotonic_ns();
      if (stuck_record_ != records_read_) {
        stuck_record_ = records_read_;
        stuck_since_ns_ = now;
      }
      if (now - stuck_since_ns_ < 100'000'000) break;
      unfinished_records_.push_back(records_read_);
    }
    ++records_read_;
  }
}

// Applies record `index`; false while it is still being written.
bool RunMonitor::read_record(std::int32_t index) {
  const run::AttachRecord& record = counters_->records[index];
  const std::int32_t state = record.state.load(std::memory_order_acquire);
  if (state == 0) return false;
  if (state != run::kAttachedExact && state != run::kAttachedFallback &&
      state != run::kAttachedLost) {
    note_fault("an attach record in the counters has state " + std::to_string(state) +
               ", which no process writes: forged or torn, ignored");
    return true;
  }
  Attachment& attachment = attachments_[{record.pid.load(), record.pid_namespace.load()}];
  // A process counted exactly once (before an exec, or after) stays so: its events counted.
  if (state == run::kAttachedExact) {
    attachment = {true, {}};
  } else if (state == run::kAttachedLost || !attachment.exact) {
    // A process that stopped counting (an event it could not place) took its counts back.
    attachment = {false, std::string(record.reason, strnlen(record.reason, sizeof record.reason))};
  }
  return true;
}

bool RunMonitor::counted_exactly(const ProcessKey& key) const {
  const auto found = attachments_.find(key);
  return found != attachments_.end() && found->second.exact;
}

// Before NVML's list is read: each injected process's slot, its `calls` word and what its events
// hold on the device (slot) then; a device no process has counted on yet holds 0 of theirs.
std::unordered_map<ProcessKey, RunMonitor::SlotReading, ProcessKeyHash> RunMonitor::read_slots(
    int device) const {
  std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash> slots;
  const std::size_t used = run::process_slots_used(*counters_);
  for (std::size_t index = 0; index < used; ++index) {
    const run::ProcessSlot& slot = counters_->processes[index];
    const std::int32_t pid = slot.pid.load(std::memory_order_acquire);
    const std::uint64_t pid_namespace = slot.pid_namespace.load(std::memory_order_acquire);
    if (pid <= 0 || pid_namespace == 0) continue;
    // `calls` first (acquire: every call that left shows its events in the ledger), then the
    // ledger.
    std::uint64_t calls = run::read_calls(slot);
    std::int64_t bytes = device >= 0 ? run::ledger_bytes(slot, device) : 0;
    if (bytes < 0 || bytes > kMostBytes) {  // forged or torn: its reading cannot be quiet
      bytes = 0;
      calls = run::kCallEntered;
    }
    slots[{pid, pid_namespace}] = {index, calls, bytes,
                                   slot.claimed_ns.load(std::memory_order_relaxed),
                                   slot.context_ns.load(std::memory_order_acquire)};
  }
  return slots;
}

// After NVML's list was read: what each process's events held during the reading, and whether
// no call of it overlapped the reading (its `calls` word unchanged, with none in flight). A
// process that gave its slot back meanwhile is left out: it is exiting, and what NVML still shows
// for it is no longer beyond its events.
std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> RunMonitor::confirm_slots(
    const std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash>& before) const {
  std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> held;
  // Orders NVML's reading before the loads below: a charge NVML showed comes with its call's ENTER.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (const auto& [key, reading] : before) {
    const run::ProcessSlot& slot = counters_->processes[reading.index];
    const std::uint64_t calls = run::read_calls(slot);
    if (slot.pid.load(std::memory_order_acquire) != key.pid ||
        slot.pid_namespace.load(std::memory_order_acquire) != key.pid_namespace)
      continue;
    held[key] = {reading.held, run::quiet_calls(reading.calls) && calls == reading.calls};
  }
  return held;
}

RunMonitor::Fingerprint RunMonitor::fingerprint(std::vector<std::optional<std::int64_t>>& used) {
  Fingerprint print;
  used.clear();
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    const auto bytes = gpu_mem_get_used_bytes_fast(devices_[index].handle);
    used.push_back(bytes ? std::optional<std::int64_t>(static_cast<std::int64_t>(*bytes))
                         : std::nullopt);
    print.words.push_back(used.back().value_or(-1));
    if (counters_ == nullptr) continue;
    const int slot = device_slot(index);
    print.words.push_back(slot);
    if (slot < 0) continue;
    print.words.push_back(counters_->devices[slot].peak.load(std::memory_order_relaxed));
    print.words.push_back(counters_->devices[slot].current.load(std::memory_order_relaxed));
  }
  if (counters_ == nullptr) return print;
  print.words.push_back(counters_->record_count.load(std::memory_order_acquire));
  print.words.push_back((std::int64_t{counters_->magic} << 32) | counters_->version);
  const std::size_t used_slots = run::process_slots_used(*counters_);
  print.words.push_back(static_cast<std::int64_t>(used_slots));
  for (std::size_t index = 0; index < used_slots; ++index) {
    const run::ProcessSlot& slot = counters_->processes[index];
    print.words.push_back(slot.pid.load(std::memory_order_acquire));
    print.words.push_back(
        static_cast<std::int64_t>(slot.pid_namespace.load(std::memory_order_acquire)));
    print.words.push_back(static_cast<std::int64_t>(run::read_calls(slot)));
    print.words.push_back(slot.claimed_ns.load(std::memory_order_relaxed));
  }
  return print;
}

void RunMonitor::note_device_used(DeviceTrack& track, std::int64_t used, double time_s) {
  track.device_end = used;
  if (track.device_end > track.device_peak) {
    track.device_peak = track.device_end;
    track.device_peak_time_s = time_s;
  }
  if (keep_timeline_)
    timeline_.push_back({time_s, track.info.device, Series::device, 0, track.device_end});
}

void RunMonitor::quiet_sample(const std::vector<std::optional<std::int64_t>>& used) {
  drain_events(false);
  const double time_s = now_s();
  const std::int64_t now_ns = monotonic_ns();
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    DeviceTrack& track = devices_[index];
    const int ordinal = track.info.device;
    if (used[index]) note_device_used(track, *used[index], time_s);
    if (keep_timeline_) {
      for (const auto& [pid, bytes] : listed_rows_[index])
        timeline_.push_back({time_s, ordinal, Series::process, pid, bytes});
      timeline_.push_back({time_s, ordinal, Series::tree, 0, listed_tree_sum_[index]});
      if (const int slot = device_slot(index); slot >= 0 && ring_reader_.lost > 0)
        timeline_.push_back({time_s, ordinal, Series::exact, 0,
                             counters_->devices[slot].current.load(std::memory_order_relaxed)});
    }
    quiet_seen_ns_[index] = now_ns;
    holders_.still(ordinal, now_ns);
  }
}

void RunMonitor::sample(bool final) {
  ++samples_;
  // Nothing changed since the last full sample, which left nothing unsettled: the figures NVML's
  // list would give are the ones it gave then.
  std::vector<std::optional<std::int64_t>> used;
  const std::int64_t print_ns = monotonic_ns();
  Fingerprint print = fingerprint(used);
  if (!final && settled_ && print == full_fingerprint_ &&
      print_ns - full_ns_ < kFullSampleEveryNs) {
    quiet_sample(used);
    return;
  }
  bool settled = counters_ != nullptr && counters_fault_.empty();
  if (counters_ != nullptr) {
    read_attachments();
    give_back_dead_processes();
    drain_events(final);
    // Every attach record read: none is being written.
    settled = settled && unfinished_records_.empty() &&
              records_read_ >= std::min(counters_->record_count.load(std::memory_order_acquire),
                                        run::kMaxRecords);
  }
  const double time_s = now_s();
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    DeviceTrack& track = devices_[index];
    const int ordinal = track.info.device;
    const int slot = counters_ != nullptr ? device_slot(index) : -1;
    // The processes summed at the last full sample were there at every quiet one since.
    if (quiet_seen_ns_[index] != 0) {
      for (const auto& [key, context] : summed_contexts_[index]) {
        if (const auto lifetime = lifetimes_.find(key); lifetime != lifetimes_.end())
          lifetime->second.last_seen_ns =
              std::max(lifetime->second.last_seen_ns, quiet_seen_ns_[index]);
      }
      quiet_seen_ns_[index] = 0;
    }
    listed_rows_[index].clear();
    if (used[index]) note_device_used(track, *used[index], time_s);
    std::int64_t tree_sum = 0;
    std::int64_t escaped_sum = 0;  // of the processes not counted exactly
    std::int64_t context_sum = 0;  // of those counted exactly, beyond their events
    // Each exactly counted process's context now, and what its process was when the events' peak
    // since the previous sample may have been made (below).
    struct Context {
      ProcessKey key;
      std::int64_t now = 0;
      std::optional<std::int64_t> before;  // summed at the previous sample too
      std::int64_t claimed_ns = 0;         // since when its context stood (context_since)
    };
    std::vector<Context> peak_contexts;
    // The exactly counted processes with no context estimate yet, and when each claimed its slot.
    std::vector<std::pair<ProcessKey, std::int64_t>> unestimated;
    std::unordered_map<ProcessKey, std::int64_t, ProcessKeyHash> summed;
    std::int64_t unmapped_sum = 0;  // of the pids that may be the command's, unmatched
    // What the events held while NVML was read, and whether a call overlapped the reading: the
    // driver's figures and the events differ while one is in flight, and that difference must
    // not pass for context memory (docs/peaks.md).
    std::unordered_map<ProcessKey, SlotReading, ProcessKeyHash> slots;
    if (counters_ != nullptr) slots = read_slots(slot);
    const auto read = detail::device_process_list(ordinal);
    const std::vector<ProcessMemory> listed = read.value_or(std::vector<ProcessMemory>{});
    if (read) holders_.add(ordinal, monotonic_ns(), listed);
    if (!read) settled = false;
    const std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash> held =
        counters_ != nullptr ? confirm_slots(slots)
                             : std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash>{};
    pids_->observe(listed, held);
    if (!pids_->settled()) settled = false;
    for (const ProcessMemory& process : listed) {
      const std::optional<Member> member = pids_->member(process.pid);
      if (!member && !pids_->maybe_member(process.pid)) continue;
      // No figure (MIG without privileges): an unmatched pid still says the processes cannot
      // all be told apart.
      if (!process.used_bytes && member) {
        settled = false;
        continue;
      }
      const auto bytes = static_cast<std::int64_t>(process.used_bytes.value_or(0));
      if (!member) {
        settled = false;
        unmapped_sum += bytes;
      } else {
        tree_sum += bytes;
      }
      if (!member || counters_ == nullptr) {
      } else if (!counted_exactly(member->key)) {
        settled = false;
        escaped_sum += bytes;
      } else {
        const auto reading = held.find(member->key);
        // Only a reading no call overlapped tells the context apart from the events; the last
        // such estimate stands in for the others.
        if (reading != held.end() && reading->second.quiet) {
          const std::int64_t context = std::max<std::int64_t>(0, bytes - reading->second.bytes);
          contexts_[member->key][ordinal] = context;
          ContextSteps& steps = context_history_[member->key][ordinal];
          if (steps.empty() || steps.back().second != context)
            steps.emplace_back(monotonic_ns(), context);
        }
        const auto& contexts = contexts_[member->key];
        if (const auto known = contexts.find(ordinal);
            reading != held.end() && known != contexts.end()) {
          context_sum += known->second;
          summed[member->key] += known->second;
          const SlotReading& reading_now = slots.at(member->key);
          Context context{member->key, known->second, std::nullopt,
                          context_since(reading_now.claimed_ns, reading_now.context_ns)};
          const auto& previous = summed_contexts_[index];
          if (const auto before = previous.find(member->key); before != previous.end())
            context.before = before->second;
          peak_contexts.push_back(context);
        } else if (reading != held.end()) {
          const SlotReading& reading_now = slots.at(member->key);
          unestimated.emplace_back(member->key,
                                   context_since(reading_now.claimed_ns, reading_now.context_ns));
        }
        if (reading == held.end() || !reading->second.quiet ||
            !contexts_[member->key].contains(ordinal))
          settled = false;
      }
      if (keep_timeline_) {
        timeline_.push_back({time_s, ordinal, Series::process, process.pid, bytes});
        listed_rows_[index].emplace_back(process.pid, bytes);
      }
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
        if (member->local_pid > 0)
          known->name =
              procfs::command_name("/proc", std::to_string(member->local_pid)).value_or("");
      }
      // The rank comes from the process's environment, read through its pid in gpumem's
      // namespace: an NVML pid not matched to one of the command's processes has none.
      if (member && member->local_pid > 0)
        known->rank = ranks_.observe(static_cast<unsigned>(member->local_pid), ordinal, bytes);
    }
    // The processes summed at the previous sample and gone now, with their slots then.
    std::vector<std::pair<SlotReading, std::int64_t>> vanished;
    std::vector<ProcessKey> vanished_keys;
    for (const auto& [key, context] : summed_contexts_[index]) {
      if (summed.contains(key)) continue;
      if (const auto slot_then = summed_slots_[index].find(key);
          slot_then != summed_slots_[index].end()) {
        vanished.emplace_back(slot_then->second, context);
        vanished_keys.push_back(key);
        if (const auto released = released_ns(slot_then->second))
          lifetimes_[key].released_ns = *released;
      }
    }
    summed_slots_[index].clear();
    for (const auto& [key, context] : summed) {
      if (const auto reading = slots.find(key); reading != slots.end()) {
        summed_slots_[index][key] = reading->second;
        Lifetime& lifetime = lifetimes_[key];
        if (lifetime.claimed_ns == 0) lifetime.claimed_ns = reading->second.claimed_ns;
        lifetime.last_seen_ns = monotonic_ns();
      }
    }
    summed_contexts_[index] = std::move(summed);
    track.unmapped_peak = std::max(track.unmapped_peak, unmapped_sum);
    listed_tree_sum_[index] = tree_sum;
    if (keep_timeline_) timeline_.push_back({time_s, ordinal, Series::tree, 0, tree_sum});
    if (tree_sum > track.tree_peak) {
      track.tree_peak = tree_sum;
      track.tree_peak_time_s = time_s;
    }
    if (counters_ != nullptr) {
      // A device no measured process has counted on yet holds nothing of theirs.
      const run::DeviceCounters* exact = slot >= 0 ? &counters_->devices[slot] : nullptr;
      std::int64_t peak = exact ? exact->peak.load(std::memory_order_relaxed) : 0;
      std::int64_t current = exact ? exact->current.load(std::memory_order_relaxed) : 0;
      // The file is the command's to write: a rewritten header is named first (it is the cause
      // of what else was rewritten with it), a level no device can hold is named and ignored.
      if (header_rewritten(counters_)) note_fault(kRewritten);
      if (!plausible(track, peak) || !plausible(track, current)) {
        note_fault("GPU " + std::to_string(ordinal) + "'s level in the counters (peak " +
                   std::to_string(peak) + " B, now " + std::to_string(current) +
                   " B) is beyond what the device can hold: forged or torn, ignored");
        peak = track.exact_peak;
        current = 0;
      }
      // The bracketed peak (run_counters.hpp): never below what the device held of the events.
      // Within the device's total, which also bounds it (in-flight requests that failed for want
      // of memory can take the bracketed level past it); a negative one is forged.
      std::int64_t upper = exact ? exact->bracket_peak.load(std::memory_order_relaxed) : 0;
      const auto total = static_cast<std::int64_t>(track.info.memory.total);
      if (upper < 0) {
        note_fault("GPU " + std::to_string(ordinal) + "'s bracketed peak in the counters (" +
                   std::to_string(upper) + " B) is below zero: forged or torn, ignored");
        upper = 0;
      }
      if (total > 0) upper = std::min(upper, total);
      track.exact_peak_upper = std::max({track.exact_peak_upper, upper, peak});
      const bool rose = peak > track.exact_peak;
      if (rose) {
        const double peak_time_s = std::clamp(
            static_cast<double>(exact->peak_time_ns.load() - start_ns_) / 1e9, 0.0, time_s);
        track.exact_peak = peak;
        track.exact_peak_time_s = peak_time_s;
        // Without the event timeline (it lost events), the peak is shown where it happened.
        if (keep_timeline_ && peak != current && ring_reader_.lost > 0) {
          timeline_.push_back({peak_time_s, ordinal, Series::exact, 0, peak});
        }
      }
      if (keep_timeline_ && ring_reader_.lost > 0)
        timeline_.push_back({time_s, ordinal, Series::exact, 0, current});
      track.context_bytes = std::max(track.context_bytes, context_sum);
      // The events' peak since the last sample, on top of the contexts that were there when it
      // was made: a process seen at the previous sample, with the lower of its two estimates; one
      // seen first now, only if it had started by then (a process that started after the peak was
      // not part of it).
      std::int64_t peak_context_sum = 0;
      if (rose) {
        const std::int64_t peak_ns = exact->peak_time_ns.load(std::memory_order_relaxed);
        for (const Context& context : peak_contexts) {
          if (context.before) {
            peak_context_sum += std::min(*context.before, context.now);
          } else if (context.claimed_ns <= peak_ns) {
            peak_context_sum += context.now;
          }
        }
        // A process that has exited since the previous sample (a spike just before its exit): it
        // was there at the peak if it gave its slot back after it, and its slot has had no other
        // owner since (else what the slot says is that owner's).
        for (const auto& [then, context] : vanished) {
          const std::optional<std::int64_t> released = released_ns(then);
          if (released && context_since(then.claimed_ns, then.context_ns) <= peak_ns &&
              peak_ns <= *released)
            peak_context_sum += context;
        }
        // A process no sample listed around the peak (a short one, or one that came and went
        // between samples) that was there at it: its context as its own readings gave it.
        for (const auto& [asked_key, asked] : asked_) {
          const auto& key = asked_key;  // a lambda cannot capture a structured binding in clang 14
          if (!counted_exactly(key) || asked.claimed_ns > peak_ns ||
              (asked.released_ns != 0 && asked.released_ns < peak_ns) ||
              std::any_of(peak_contexts.begin(), peak_contexts.end(),
                          [&](const Context& context) { return context.key == key; }) ||
              std::find(vanished_keys.begin(), vanished_keys.end(), key) != vanished_keys.end())
            continue;
          if (const auto context = context_at(key, ordinal, peak_ns)) peak_context_sum += *context;
        }
      }
      if (rose) {
        track.pending = {peak + peak_context_sum, track.exact_peak_time_s, {}};
        const std::int64_t peak_ns = exact->peak_time_ns.load(std::memory_order_relaxed);
        for (const auto& [key, claimed_ns] : unestimated)
          if (claimed_ns <= peak_ns) track.pending.awaiting.push_back(key);
        // A process counted exactly that this sample's slots did not show (it claimed its slot
        // after they were read) and with no estimate yet: its events may be in the peak, and its
        // context joins it with its first estimate if it had claimed its slot by the peak's time
        // (its own reading tells when, below).
        track.pending.peak_ns = peak_ns;
        for (const auto& [key, attachment] : attachments_) {
          if (!attachment.exact || slots.contains(key)) continue;
          if (const auto known = contexts_.find(key);
              known != contexts_.end() && known->second.contains(ordinal))
            continue;
          track.pending.awaiting.push_back(key);
        }
      }
      // A process that was there at the peak and has an estimate now (a quiet reading at last).
      std::erase_if(track.pending.awaiting, [&](const ProcessKey& key) {
        const auto& contexts = contexts_[key];
        const auto known = contexts.find(ordinal);
        if (known == contexts.end()) return false;
        // Not there at the peak: it claimed its slot after it, or had given it back before it.
        if (const auto asked = asked_.find(key);
            asked != asked_.end() &&
            (asked->second.claimed_ns > track.pending.peak_ns ||
             (asked->second.released_ns != 0 && asked->second.released_ns < track.pending.peak_ns)))
          return true;
        track.pending.bytes += known->second;
        return true;
      });
      if (track.pending.bytes > track.footprint_peak) {
        track.footprint_peak = track.pending.bytes;
        track.footprint_peak_time_s = track.pending.time_s;
      }
      if (current + context_sum > track.footprint_peak) {
        track.footprint_peak = current + context_sum;
        track.footprint_peak_time_s = time_s;
      }
      if (current + context_sum + escaped_sum > track.mixed_peak) {
        track.mixed_peak = current + context_sum + escaped_sum;
        track.mixed_peak_time_s = time_s;
      }
      if (!track.pending.awaiting.empty()) settled = false;
    }
  }
  ranks_.end_sample(time_s);
  full_fingerprint_ = std::move(print);
  full_ns_ = print_ns;
  settled_ = settled && counters_fault_.empty();
}

}  // namespace gpumem::run
