// The run's headline figure and how each of its processes was measured: decided here, once, for
// every view of the run (run_result.hpp).
#include <algorithm>
#include <set>
#include <utility>

#include "gpumem/internal/run_counters.hpp"
#include "gpumem/internal/run_result.hpp"
#include "run/judge.hpp"

namespace gpumem::run {

const char* to_string(Measured measured) {
  switch (measured) {
    case Measured::exact:
      return "exact";
    case Measured::mixed:
      return "mixed";
    case Measured::sampled:
      return "sampled";
  }
  return "?";
}

// The process footprint: exactly, the events' peak, but never below what NVML showed the
// command's processes holding at any sample (contexts and modules, which no event shows).
// In a mixed run, also never below the exact level plus what the escaped processes held.
// When some of NVML's pids could not be matched to the command's processes, never below the
// device's rise over the run either.
std::int64_t command_peak(const RunResult& result, const DeviceTrack& device) {
  const std::int64_t bound = device.bounded_by_device ? device_rise(device) : std::int64_t{0};
  switch (result.measured) {
    case Measured::exact:
      return std::max({device.footprint_peak, device.exact_peak, device.tree_peak, bound});
    case Measured::mixed:
      return std::max(
          {device.footprint_peak, device.exact_peak, device.tree_peak, device.mixed_peak, bound});
    case Measured::sampled:
      break;
  }
  return std::max(device.tree_peak, bound);
}

std::optional<std::int64_t> command_peak_at_most(const RunResult& result,
                                                 const DeviceTrack& device) {
  if (result.measured != Measured::exact || device.exact_peak_upper <= device.exact_peak)
    return std::nullopt;
  return command_peak(result, device) + (device.exact_peak_upper - device.exact_peak);
}

bool device_used(const RunResult& result, const DeviceTrack& device) {
  return command_peak(result, device) > 0 || device.exact_peak > 0 || device.footprint_peak > 0 ||
         device.tree_peak > 0 || device.mixed_peak > 0;
}

std::int64_t device_rise(const DeviceTrack& device) {
  return std::max<std::int64_t>(0, device.device_peak - device.device_start);
}

double command_peak_time(const RunResult& result, const DeviceTrack& device) {
  const std::int64_t peak = command_peak(result, device);
  if (device.bounded_by_device && peak == device_rise(device) && peak > 0)
    return device.device_peak_time_s;
  if (result.measured != Measured::sampled && device.footprint_peak == peak && peak > 0)
    return device.footprint_peak_time_s;
  if (result.measured != Measured::sampled && device.exact_peak == peak && peak > 0)
    return device.exact_peak_time_s;
  if (result.measured == Measured::mixed && device.mixed_peak == peak && peak > device.tree_peak)
    return device.mixed_peak_time_s;
  return device.tree_peak_time_s;
}

// Which of the command's GPU processes were counted exactly, which escaped and why, and so the
// run's mode: exact only when every one was.
void judge_processes(const run::RunCounters* counters, const RunMonitor& monitor,
                     RunResult& result) {
  const auto& attachments = monitor.attachments();
  // A process by how it names itself; an unmatched NVML pid by that pid (namespace 0).
  std::set<std::pair<std::uint64_t, std::int64_t>> escaped;
  std::set<unsigned> unmapped;
  std::string first_reason;
  const PidMapper* pids = monitor.pids();
  if (pids != nullptr) {
    result.nvml_pids_foreign = pids->foreign();
    result.pid_namespace_reason = pids->foreign_reason();
    result.nested_namespaces = pids->nested_seen();
    result.matched_pids = pids->matched();
  }
  for (const ProcessPeak& peak : monitor.process_peaks()) {
    ProcessReport report{peak, false, {}};
    const auto found = peak.key ? attachments.find(*peak.key) : attachments.end();
    if (!peak.key) {
      unmapped.insert(peak.pid);
      report.reason = "NVML's pid " + std::to_string(peak.pid) +
                      " matches none of the command's processes (another pid namespace's: one of "
                      "the command's processes, or another container's)";
    } else if (counters == nullptr) {
      report.reason = result.fallback_reason.empty() ? "sampled mode" : result.fallback_reason;
    } else if (found == attachments.end()) {
      report.reason = "did not load the injection library";
    } else if (const auto unknown = monitor.unknown_contexts().find(*peak.key);
               found->second.exact && unknown != monitor.unknown_contexts().end()) {
      report.reason = unknown->second;  // its events counted, its context not known
    } else if (found->second.exact) {
      report.exact = true;
    } else {
      report.reason = found->second.reason;
    }
    if (!report.exact && counters != nullptr) {
      escaped.insert(
          peak.key ? std::pair<std::uint64_t, std::int64_t>{peak.key->pid_namespace, peak.key->pid}
                   : std::pair<std::uint64_t, std::int64_t>{0, peak.pid});
      if (first_reason.empty()) {
        const int shown = peak.local_pid > 0 ? peak.local_pid : static_cast<int>(peak.pid);
        first_reason = "process " + std::to_string(shown) +
                       (peak.name.empty() ? "" : " (" + peak.name + ")") + ": " + report.reason;
      }
    }
    result.processes.push_back(std::move(report));
  }
  result.unmapped_processes = static_cast<int>(unmapped.size());
  if (counters == nullptr) return;  // sampled, with the reason already given
  int counted_in_part = 0;  // events counted, a context not read: the figures keep the events
  for (const auto& [key, attachment] : attachments) {
    const auto unknown = monitor.unknown_contexts().find(key);
    if (attachment.exact && unknown != monitor.unknown_contexts().end()) {
      // Never claimed exact with a part unread: its events are in the figures, its context may
      // not be, and the peak may have been higher.
      ++counted_in_part;
      if (escaped.insert({key.pid_namespace, key.pid}).second && first_reason.empty())
        first_reason = "process " + std::to_string(key.pid) + ": " + unknown->second;
    } else if (attachment.exact) {
      ++result.exact_processes;
    } else if (escaped.insert({key.pid_namespace, key.pid}).second && first_reason.empty()) {
      first_reason = "process " + std::to_string(key.pid) + ": " + attachment.reason;
    }
  }
  if (!monitor.counters_fault().empty()) {
    escaped.insert({0, 0});
    if (first_reason.empty()) first_reason = monitor.counters_fault();
  }
  if (counters->record_count.load() > run::kMaxRecords && first_reason.empty()) {
    escaped.insert({0, 0});
    first_reason = "too many CUDA processes to record";
  }
  result.escaped_processes = static_cast<int>(escaped.size());
  result.fallback_reason = first_reason;
  result.measured = escaped.empty()                                ? Measured::exact
                    : result.exact_processes + counted_in_part > 0 ? Measured::mixed
                                                                   : Measured::sampled;
}

}  // namespace gpumem::run
