#include "run_report.hpp"

#include <algorithm>
#include <cstdio>

#include "child_process.hpp"
#include "format.hpp"
#include "rank_report.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::automatic:
      return "auto";
    case Mode::exact:
      return "exact";
    case Mode::sampled:
      return "sampled";
  }
  return "?";
}

std::string command_line(const std::vector<std::string>& command) {
  std::string line;
  for (const std::string& word : command) {
    if (!line.empty()) line += ' ';
    line += word.find_first_of(" \t'\"") == std::string::npos ? word : "'" + word + "'";
  }
  // The command's words are anyone's text: shown through printable(), cut by columns.
  return truncate_to_width(printable(line), 60, "...");
}

std::string plural(int count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

}  // namespace

std::string ordinal_ranges(const std::vector<int>& ordinals, bool unicode) {
  std::string out;
  for (std::size_t first = 0; first < ordinals.size();) {
    std::size_t last = first;
    while (last + 1 < ordinals.size() && ordinals[last + 1] == ordinals[last] + 1) ++last;
    if (last < first + 2) last = first;  // two in a row read better as "0, 1"
    if (!out.empty()) out += ", ";
    out += std::to_string(ordinals[first]);
    if (last > first) out += (unicode ? "\u2013" : "-") + std::to_string(ordinals[last]);
    first = last + 1;
  }
  return out;
}

std::string wrap_lines(const std::string& text, std::size_t width) {
  // Continuation lines are indented past the "gpumem: " that starts each line.
  const std::string indent = "gpumem:   ";
  if (width <= display_width(indent) + 8) return text;  // too narrow to wrap usefully
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line =
        text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    out += wrap_line(line, width, indent);
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

std::string summary_text(const RunResult& result, const SummaryStyle& style) {
  std::string out = "gpumem: " + command_line(result.command) + ": ";
  out += result.exit.signal != 0 ? "killed by " + signal_name(result.exit.signal)
                                 : "exit status " + std::to_string(result.exit.exit_code);
  out += ", ran " + format_seconds(result.elapsed_s) + "\n";
  const bool exact = result.measured == Measured::exact;
  if (result.no_gpu) {
    out += "gpumem: no GPU measured" +
           (result.no_gpu_reason.empty() ? std::string() : ": " + printable(result.no_gpu_reason)) +
           "\n";
  } else if (exact && result.exact_processes == 0) {
    out += "gpumem: measured exactly: no process of the command used CUDA\n";
  } else if (exact && std::any_of(result.devices.begin(), result.devices.end(),
                                  [&](const DeviceTrack& device) {
                                    return command_peak_at_most(result, device).has_value();
                                  })) {
    out += "gpumem: measured from the CUDA memory events of " +
           plural(result.exact_processes, "process", "processes") +
           ", to a range where calls that allocated and freed were in flight together at the peak"
           " (the driver does not say which of them came first)\n";
  } else if (exact) {
    out += "gpumem: measured exactly (CUDA memory events of " +
           plural(result.exact_processes, "process", "processes") + ")\n";
  } else if (result.measured == Measured::mixed) {
    out += "gpumem: mixed: " + plural(result.exact_processes, "process", "processes") +
           " measured exactly, " + plural(result.escaped_processes, "process", "processes") +
           " sampled every " + format_seconds(result.interval_s) + " (" +
           printable(result.fallback_reason) + ")\n";
  } else if (!result.devices.empty()) {
    out += "gpumem: sampled every " + format_seconds(result.interval_s) +
           " (spikes shorter than that can be missed)";
    out += result.fallback_reason.empty()
               ? "\n"
               : ": exact unavailable: " + printable(result.fallback_reason) + "\n";
  }
  std::vector<int> unused;
  for (const DeviceTrack& device : result.devices) {
    if (!device_used(result, device) && !device.bounded_by_device) {
      unused.push_back(device.info.device);
      continue;
    }
    // Names (a process's, the device's) are shown through printable(): no terminal control.
    const std::optional<std::int64_t> at_most = command_peak_at_most(result, device);
    out += "gpumem: GPU " + std::to_string(device.info.device) + " (" +
           printable(device.info.name) + "): peak " + format_bytes(command_peak(result, device)) +
           (at_most ? " to " + format_bytes(*at_most) : "") + " process footprint";
    if (exact && at_most) {
      out += " (CUDA events " + format_bytes(device.exact_peak) + " to " +
             format_bytes(device.exact_peak_upper) + ", with contexts " +
             format_bytes(device.footprint_peak) + ", NVML's per-process figures " +
             format_bytes(device.tree_peak) + ")";
    } else if (exact) {
      out += " (CUDA events " + format_bytes(device.exact_peak) + ", with contexts " +
             format_bytes(device.footprint_peak) + ", NVML's per-process figures " +
             format_bytes(device.tree_peak) + ")";
    } else if (result.measured == Measured::mixed) {
      out += " (CUDA events " + format_bytes(device.exact_peak) + ", with the sampled processes " +
             format_bytes(device.mixed_peak) + ", NVML's per-process figures " +
             format_bytes(device.tree_peak) + ")";
    } else {
      out += " (NVML's per-process figures, sampled)";
    }
    out += "; device used peak " + format_bytes(device.device_peak) + " (from " +
           format_bytes(device.device_start) + ")\n";
    if (device.bounded_by_device) {
      out += "gpumem: GPU " + std::to_string(device.info.device) +
             ": some of NVML's pids match none of the command's processes; the peak is at least "
             "the device's rise over the run, " +
             format_bytes(device_rise(device)) + " (which counts any other process's change too)\n";
    }
  }
  if (!unused.empty()) {
    std::sort(unused.begin(), unused.end());
    out += std::string("gpumem: ") + (unused.size() == 1 ? "GPU " : "GPUs ") +
           ordinal_ranges(unused, style.unicode) + ": not used\n";
  }
  if (result.nvml_pids_foreign) {
    out += "gpumem: " + result.pid_namespace_reason + ": " + std::to_string(result.matched_pids) +
           " matched to the command's processes by their memory, " +
           std::to_string(result.unmapped_processes) + " unmatched\n";
  }
  if (result.devices.empty() && !result.no_gpu) out += "gpumem: no GPU was measured\n";
  out += rank_summary(result);
  if (!result.descendants_running.empty()) {
    const int count = static_cast<int>(result.descendants_running.size());
    out +=
        "gpumem: " + plural(count, "descendant", "descendants") + " of the command still running ";
    out += result.descendants_waited
               ? "after " + format_seconds(result.descendants_wait_s) + ", not measured further"
               : "when it exited, not waited for (--no-wait-descendants)";
    out += " (pid";
    for (int pid : result.descendants_running) out += " " + std::to_string(pid);
    out += ")";
    if (!result.descendants_waited) {
      out += ": the figures above stop at the command's exit; what " +
             std::string(count == 1 ? "it" : "they") +
             " allocated after that is not counted, so the peak may be higher";
    }
    out += "\n";
  }
  return style.width ? wrap_lines(out, *style.width) : out;
}

namespace {
nlohmann::ordered_json at_most_json(std::optional<std::int64_t> bytes) {
  return bytes ? nlohmann::ordered_json(*bytes) : nlohmann::ordered_json();
}
}  // namespace

nlohmann::ordered_json summary_json(const RunResult& result,
                                    const std::vector<BudgetVerdict>& budgets) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const DeviceTrack& device : result.devices) {
    devices.push_back({
        {"device", device.info.device},
        {"nvml_index", device.info.nvml_index},
        {"name", device.info.name},
        {"uuid", device.info.uuid},
        {"total_bytes", device.info.memory.total},
        {"quantity", "process_footprint"},
        {"peak_bytes", command_peak(result, device)},
        // An exact run's peak bounded to a range by calls in flight together: its high end.
        {"peak_at_most_bytes", at_most_json(command_peak_at_most(result, device))},
        {"peak_time_s", command_peak_time(result, device)},
        {"exact_peak_bytes", result.measured != Measured::sampled
                                 ? nlohmann::ordered_json(device.exact_peak)
                                 : nlohmann::ordered_json()},
        {"exact_peak_at_most_bytes",
         at_most_json(command_peak_at_most(result, device) ? std::optional(device.exact_peak_upper)
                                                           : std::nullopt)},
        {"sampled_peak_bytes", device.tree_peak},
        {"context_bytes", result.measured != Measured::sampled
                              ? nlohmann::ordered_json(device.context_bytes)
                              : nlohmann::ordered_json()},
        {"device_used_start_bytes", device.device_start},
        {"device_used_peak_bytes", device.device_peak},
        {"device_used_end_bytes", device.device_end},
        {"unmapped_peak_bytes", device.unmapped_peak},
        {"bounded_by_device_used", device.bounded_by_device},
    });
  }
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  for (const ProcessReport& process : result.processes) {
    processes.push_back(
        {{"pid", process.peak.local_pid > 0 ? nlohmann::ordered_json(process.peak.local_pid)
                                            : nlohmann::ordered_json()},
         {"nvml_pid", process.peak.pid},
         {"name", process.peak.name},
         {"device", process.peak.device},
         {"mode", process.exact ? "exact" : "sampled"},
         {"reason",
          process.exact ? nlohmann::ordered_json() : nlohmann::ordered_json(process.reason)},
         {"sampled_peak_bytes", process.peak.peak}});
    add_rank_fields(processes.back(), process.peak.rank);
  }
  return {
      {"schema", "gpumem.run/1"},
      {"command", result.command},
      {"exit_code", result.exit.exit_code},
      {"signal", result.exit.signal != 0 ? nlohmann::ordered_json(signal_name(result.exit.signal))
                                         : nlohmann::ordered_json()},
      {"elapsed_s", result.elapsed_s},
      {"start_unix_s", result.start_unix_s},
      {"end_unix_s", result.end_unix_s},
      {"mode", to_string(result.measured)},
      {"requested_mode", mode_name(result.requested)},
      {"fallback_reason", result.fallback_reason.empty()
                              ? nlohmann::ordered_json()
                              : nlohmann::ordered_json(result.fallback_reason)},
      {"exact_processes", result.exact_processes},
      {"escaped_processes", result.escaped_processes},
      {"descendants_running", result.descendants_running},
      {"descendants_waited", result.descendants_waited},
      {"interval_s", result.interval_s},
      {"samples", result.samples},
      {"devices", devices},
      {"processes", processes},
      {"pid_namespace",
       {{"nvml_pids", result.nvml_pids_foreign ? "foreign" : "own"},
        {"reason", result.nvml_pids_foreign ? nlohmann::ordered_json(result.pid_namespace_reason)
                                            : nlohmann::ordered_json()},
        {"matched", result.matched_pids},
        {"unmatched", result.unmapped_processes},
        {"nested", result.nested_namespaces}}},
      {"host", result.host},
      {"gpumem_rank", own_rank_json(result.own_rank)},
      {"ranks", ranks_json(result)},
      // --max-peak: each budgeted device's verdict (an empty list without budgets).
      {"budgets", budget_json(budgets)},
      {"budget_exceeded", std::any_of(budgets.begin(), budgets.end(),
                                      [](const BudgetVerdict& v) { return v.exceeded; })},
  };
}

std::string timeline_csv(std::vector<TimelineRow> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TimelineRow& a, const TimelineRow& b) { return a.time_s < b.time_s; });
  std::string out = "time_s,device,series,pid,used_bytes\n";
  char line[128];
  for (const TimelineRow& row : rows) {
    const std::string pid = row.series == Series::process ? std::to_string(row.pid) : "";
    std::snprintf(line, sizeof line, "%.6f,%d,%s,%s,%lld\n", row.time_s, row.device,
                  to_string(row.series), pid.c_str(), static_cast<long long>(row.bytes));
    out += line;
  }
  return out;
}

}  // namespace gpumem::cli
