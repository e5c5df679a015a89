// The attribution of a `gpumem run` (attribution_folder.hpp).
#include "run/attribution_folder.hpp"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "gpumem/internal/procfs.hpp"
#include "gpumem/internal/run_engine.hpp"
#include "gpumem/internal/run_timeline.hpp"

namespace gpumem::run {

namespace attribution = detail::attribution;

AttributionFolder::~AttributionFolder() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

bool AttributionFolder::create(std::string* error) {
  std::string pattern = temporary_folder() + "/gpumem-attribution-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot create a folder for the attribution snapshots under " +
             pattern.substr(0, pattern.rfind('/'));
    return false;
  }
  path_ = pattern;
  return true;
}

namespace {

// Appends `part`'s frames, stacks and snapshots to `into`, moving every index along.
void append(attribution::Document& into, attribution::Document&& part) {
  const std::size_t frame_base = into.frames.size();
  const std::size_t stack_base = into.stacks.size();
  for (attribution::Frame& frame : part.frames) into.frames.push_back(std::move(frame));
  for (std::vector<std::size_t>& stack : part.stacks) {
    for (std::size_t& frame : stack) frame += frame_base;
    into.stacks.push_back(std::move(stack));
  }
  for (attribution::Snapshot& snapshot : part.snapshots) {
    for (attribution::Block& block : snapshot.blocks) {
      if (block.stack) *block.stack += stack_base;
    }
    if (snapshot.failure && snapshot.failure->stack) *snapshot.failure->stack += stack_base;
    into.snapshots.push_back(std::move(snapshot));
  }
  for (std::string& warning : part.warnings) into.warnings.push_back(std::move(warning));
}

// The process a file is from, as its name says ("oom-PID-NAMESPACE.json").
std::optional<ProcessKey> writer_of(const std::filesystem::path& file) {
  const std::string stem = file.stem().string();
  const std::size_t first = stem.find('-');
  const std::size_t second = stem.find('-', first == std::string::npos ? first : first + 1);
  if (first == std::string::npos || second == std::string::npos) return std::nullopt;
  const std::string pid = stem.substr(first + 1, second - first - 1);
  const std::string space = stem.substr(second + 1);
  if (pid.empty() || space.empty() || pid.find_first_not_of("0123456789") != std::string::npos ||
      space.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9 ||
      space.size() > 20)
    return std::nullopt;
  try {
    return ProcessKey{static_cast<std::int32_t>(std::stol(pid)), std::stoull(space)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The devices gpumem measures, by UUID: each GPU's own, and its MIG devices' (whose counts the
// run sums into the GPU's).
class DeviceNumbering {
 public:
  explicit DeviceNumbering(const std::vector<DeviceTrack>& tracks) {
    for (const DeviceTrack& track : tracks) {
      const DeviceInfo& info = track.info;
      measured_.push_back(info);
      next_ = std::max(next_, info.device + 1);
      if (const auto uuid = run::parse_uuid(info.uuid)) by_uuid_.emplace_back(*uuid, info.device);
    }
    for (const DeviceTrack& track : tracks) {
      for (const std::string& text : mig_device_uuids(track.info.device)) {
        const auto mig = run::parse_uuid(text);
        if (mig && !ordinal_of(*mig)) by_uuid_.emplace_back(*mig, track.info.device);
      }
    }
  }

  // gpumem's ordinal for a process's device; a device gpumem does not measure gets the next
  // ordinal after its own (one per UUID), named as the process named it. Without a UUID the
  // process's own ordinal stands (`guessed` says so).
  int ordinal(const attribution::Device& theirs, bool* guessed) {
    const auto uuid = run::parse_uuid(theirs.uuid);
    if (!uuid) {
      *guessed = true;
      return theirs.ordinal;
    }
    if (const auto known = ordinal_of(*uuid)) return *known;
    by_uuid_.emplace_back(*uuid, next_);
    attribution::Device device = theirs;
    device.ordinal = next_;
    unmeasured_.push_back(device);
    return next_++;
  }

  // The document's entry for gpumem's ordinal.
  std::optional<attribution::Device> device(int ordinal) const {
    for (const DeviceInfo& info : measured_) {
      if (info.device == ordinal)
        return attribution::Device{ordinal, info.uuid, info.name,
                                   static_cast<std::int64_t>(info.memory.total)};
    }
    for (const attribution::Device& device : unmeasured_) {
      if (device.ordinal == ordinal) return device;
    }
    return std::nullopt;
  }

 private:
  std::optional<int> ordinal_of(const run::Uuid& uuid) const {
    for (const auto& [known, ordinal] : by_uuid_) {
      if (known == uuid) return ordinal;
    }
    return std::nullopt;
  }

  std::vector<DeviceInfo> measured_;
  std::vector<std::pair<run::Uuid, int>> by_uuid_;
  std::vector<attribution::Device> unmeasured_;
  int next_ = 0;
};

// The NVML pid of one of the command's processes, when the monitor matched it.
std::optional<unsigned> nvml_pid(const RunMonitor& monitor, const ProcessKey& key) {
  for (const ProcessPeak& peak : monitor.process_peaks()) {
    if (peak.key && *peak.key == key) return peak.pid;
  }
  const PidMapper* pids = monitor.pids();
  if (pids != nullptr && !pids->foreign() && key.pid_namespace == pids->own_namespace() &&
      key.pid > 0)
    return static_cast<unsigned>(key.pid);
  return std::nullopt;
}

// Who else NVML listed on the failing device, from the sample nearest before the failure.
void name_other_processes(attribution::Snapshot& snapshot, const RunMonitor& monitor,
                          const std::optional<ProcessKey>& writer) {
  if (!snapshot.monotonic_ns) return;
  const std::optional<HoldersAt> listed =
      monitor.holders().at(snapshot.device, *snapshot.monotonic_ns);
  if (!listed) return;
  const std::optional<unsigned> self = writer ? nvml_pid(monitor, *writer) : std::nullopt;
  const PidMapper* pids = monitor.pids();
  const std::vector<ProcessPeak>& peaks = monitor.process_peaks();
  snapshot.other_processes.clear();
  snapshot.other_processes_age_s = listed->age_s;
  for (const ProcessMemory& process : listed->reading->listed) {
    if (self && process.pid == *self) continue;
    attribution::OtherProcess other;
    other.pid = process.pid;
    if (process.used_bytes) other.used_bytes = static_cast<std::int64_t>(*process.used_bytes);
    const auto peak = std::find_if(peaks.begin(), peaks.end(), [&](const ProcessPeak& p) {
      return p.pid == process.pid && p.key.has_value();
    });
    if (peak != peaks.end()) {
      other.in_run = true;
      other.name = peak->name;
      if (peak->rank.rank) other.rank = *peak->rank.rank;
    } else if (pids == nullptr || !pids->foreign()) {
      other.in_run = false;
      other.name = procfs::command_name("/proc", std::to_string(process.pid))
                       .value_or("");  // NVML's pids are gpumem's own
    } else if (!pids->maybe_member(process.pid)) {
      other.in_run = false;  // on the GPU before the command started
    }  // else: a pid of another namespace that may be the command's; in_run stays unknown
    snapshot.other_processes.push_back(std::move(other));
  }
}

// A measured process counts only its events (it reads no NVML): its context, modules and the
// driver's rounding are what the monitor's reconciliation found NVML showing it hold beyond
// them, then. They join the snapshot's level as a named part, so that the level is the process
// footprint, the figure the run's summary gives.
void add_context(attribution::Snapshot& snapshot, const RunMonitor& monitor,
                 const std::optional<ProcessKey>& writer) {
  if (!writer || !snapshot.monotonic_ns || snapshot.context_bytes) return;
  const std::optional<std::int64_t> context =
      monitor.context_at(*writer, snapshot.device, *snapshot.monotonic_ns);
  if (!context) return;
  snapshot.context_bytes = *context;
  snapshot.level_bytes += *context;
}

}  // namespace

attribution::Document combine_attribution(const std::string& folder, const std::string& command,
                                          const std::string& host, const RunMonitor& monitor,
                                          std::vector<std::string>* warnings) {
  attribution::Document document;
  document.command = command;
  document.host = host;
  std::vector<std::filesystem::path> files;
  std::error_code code;
  for (const auto& entry : std::filesystem::directory_iterator(folder, code)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // oom-PID before peak-PID, by pid: one order each run
  DeviceNumbering numbering(monitor.devices());
  bool guessed = false;
  std::vector<int> ordinals;
  for (const std::filesystem::path& file : files) {
    std::string error;
    std::optional<attribution::Document> part = attribution::read_document(file.string(), &error);
    if (!part) {
      warnings->push_back("a measured process's attribution snapshot was unreadable: " + error);
      continue;
    }
    const std::optional<ProcessKey> writer = writer_of(file);
    for (attribution::Snapshot& snapshot : part->snapshots) {
      const attribution::Device* theirs = part->device(snapshot.device);
      snapshot.device = theirs != nullptr ? numbering.ordinal(*theirs, &guessed) : snapshot.device;
      guessed = guessed || theirs == nullptr;
      ordinals.push_back(snapshot.device);
      // On the run's clock, where the timeline is.
      if (snapshot.monotonic_ns)
        snapshot.time_s = static_cast<double>(*snapshot.monotonic_ns - monitor.start_ns()) / 1e9;
      if (snapshot.what == "oom") name_other_processes(snapshot, monitor, writer);
      add_context(snapshot, monitor, writer);
    }
    append(document, std::move(*part));
  }
  if (guessed)
    warnings->push_back(
        "a measured process named a device without its UUID: its CUDA ordinal was taken for "
        "gpumem's");
  // Each device's footprint over time: the exact level with the contexts the samples found, so
  // that the timeline's peak is the run's (and the snapshots' levels sit on it).
  std::vector<attribution::Timeline> tracks;
  const std::vector<TimelineRow> rows = monitor.timeline();
  const auto contexts = series_steps(rows, Series::context);
  for (const auto& [device, exact] : series_steps(rows, Series::exact)) {
    const auto found = contexts.find(device);
    attribution::Timeline track{device, {}};
    for (const Step& step :
         footprint_steps(exact, found != contexts.end() ? found->second : std::vector<Step>{}))
      track.steps.emplace_back(static_cast<double>(step.time_ns) / 1e9, step.level);
    tracks.push_back(std::move(track));
  }
  // A device the command never held memory on has no track.
  for (attribution::Timeline& track : tracks) {
    if (std::none_of(track.steps.begin(), track.steps.end(),
                     [](const auto& step) { return step.second != 0; })) {
      continue;
    }
    ordinals.push_back(track.device);
    document.timeline.push_back(std::move(track));
  }
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  for (int ordinal : ordinals) {
    attribution::Device device;
    device.ordinal = ordinal;
    if (auto known = numbering.device(ordinal)) device = std::move(*known);
    document.devices.push_back(std::move(device));
  }
  return document;
}

}  // namespace gpumem::run
