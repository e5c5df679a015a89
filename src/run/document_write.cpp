// gpumem.run/1 made from a run's result and written: the one writer of the format
// (run_document.hpp).
#include <algorithm>

#include "gpumem/internal/run_document.hpp"

namespace gpumem::run {
namespace {

using DocJson = nlohmann::ordered_json;

template <typename T>
DocJson doc_or_null(const std::optional<T>& value) {
  return value ? DocJson(*value) : DocJson(nullptr);
}

RunDocDevice device_entry(const RunResult& result, const DeviceTrack& device) {
  const bool sampled = result.measured == Measured::sampled;
  RunDocDevice entry;
  entry.device = device.info.device;
  entry.nvml_index = static_cast<int>(device.info.nvml_index);
  entry.name = device.info.name;
  entry.uuid = device.info.uuid;
  entry.total_bytes = static_cast<std::int64_t>(device.info.memory.total);
  entry.peak_bytes = command_peak(result, device);
  entry.peak_at_most_bytes = command_peak_at_most(result, device);
  entry.peak_time_s = command_peak_time(result, device);
  if (!sampled) entry.exact_peak_bytes = device.exact_peak;
  if (entry.peak_at_most_bytes) entry.exact_peak_at_most_bytes = device.exact_peak_upper;
  entry.sampled_peak_bytes = device.tree_peak;
  if (!sampled) entry.context_bytes = device.context_bytes;
  entry.device_used_start_bytes = device.device_start;
  entry.device_used_peak_bytes = device.device_peak;
  entry.device_used_end_bytes = device.device_end;
  entry.unmapped_peak_bytes = device.unmapped_peak;
  entry.bounded_by_device_used = device.bounded_by_device;
  return entry;
}

RunDocRank rank_entry(const RankRow& row) {
  RunDocRank entry;
  entry.rank = row.info.rank;
  entry.local_rank = row.info.local_rank;
  entry.pids.assign(row.pids.begin(), row.pids.end());
  for (const RankDeviceRow& cell : row.devices) {
    entry.devices.push_back({cell.device->info.device, cell.device->info.uuid, cell.peak,
                             cell.exact ? "exact" : "sampled"});
  }
  const RankDeviceRow* highest = row.highest < 0 ? nullptr : &row.devices[row.highest];
  entry.peak_bytes = highest != nullptr ? highest->peak : 0;
  if (highest != nullptr) {
    entry.device = highest->device->info.device;
    entry.uuid = highest->device->info.uuid;
  }
  entry.measured = highest != nullptr && highest->exact ? "exact" : "sampled";
  return entry;
}

}  // namespace

RunDocument run_document(const RunResult& result, std::vector<RunDocBudget> budgets) {
  RunDocument document;
  document.command = result.command;
  document.exit_code = result.exit.exit_code;
  if (result.exit.signal != 0) document.signal = signal_name(result.exit.signal);
  document.elapsed_s = result.elapsed_s;
  document.start_unix_s = result.start_unix_s;
  document.end_unix_s = result.end_unix_s;
  document.mode = to_string(result.measured);
  document.requested_mode = to_string(result.requested);
  if (!result.fallback_reason.empty()) document.fallback_reason = result.fallback_reason;
  document.exact_processes = result.exact_processes;
  document.escaped_processes = result.escaped_processes;
  document.descendants_running.assign(result.descendants_running.begin(),
                                      result.descendants_running.end());
  document.descendants_waited = result.descendants_waited;
  document.interval_s = result.interval_s;
  document.samples = static_cast<std::int64_t>(result.samples);
  for (const DeviceTrack& device : result.devices)
    document.devices.push_back(device_entry(result, device));
  for (const ProcessReport& process : result.processes) {
    RunDocProcess entry;
    if (process.peak.local_pid > 0) entry.pid = process.peak.local_pid;
    entry.nvml_pid = process.peak.pid;
    entry.name = process.peak.name;
    entry.device = process.peak.device;
    entry.mode = process.exact ? "exact" : "sampled";
    if (!process.exact) entry.reason = process.reason;
    entry.sampled_peak_bytes = process.peak.peak;
    entry.rank = process.peak.rank.rank;
    entry.local_rank = process.peak.rank.local_rank;
    document.processes.push_back(std::move(entry));
  }
  document.pid_namespace.nvml_pids = result.nvml_pids_foreign ? "foreign" : "own";
  if (result.nvml_pids_foreign) document.pid_namespace.reason = result.pid_namespace_reason;
  document.pid_namespace.matched = static_cast<std::int64_t>(result.matched_pids);
  document.pid_namespace.unmatched = result.unmapped_processes;
  document.pid_namespace.nested = result.nested_namespaces;
  document.host = result.host;
  if (const RankInfo& own = result.own_rank; own.known())
    document.gpumem_rank =
        RunDocOwnRank{own.rank, own.local_rank, own.rank ? own.rank_variable : own.local_variable};
  for (const RankRow& row : rank_rows(result)) document.ranks.push_back(rank_entry(row));
  document.budget_exceeded =
      std::any_of(budgets.begin(), budgets.end(), [](const RunDocBudget& b) { return b.exceeded; });
  document.budgets = std::move(budgets);
  return document;
}

nlohmann::ordered_json run_document_json(const RunDocument& document) {
  DocJson devices = DocJson::array();
  for (const RunDocDevice& device : document.devices) {
    devices.push_back({
        {"device", device.device},
        {"nvml_index", doc_or_null(device.nvml_index)},
        {"name", device.name},
        {"uuid", device.uuid},
        {"total_bytes", device.total_bytes},
        {"quantity", device.quantity},
        {"peak_bytes", device.peak_bytes},
        // An exact run's peak bounded to a range by calls in flight together: its high end.
        {"peak_at_most_bytes", doc_or_null(device.peak_at_most_bytes)},
        {"peak_time_s", device.peak_time_s},
        {"exact_peak_bytes", doc_or_null(device.exact_peak_bytes)},
        {"exact_peak_at_most_bytes", doc_or_null(device.exact_peak_at_most_bytes)},
        {"sampled_peak_bytes", device.sampled_peak_bytes},
        {"context_bytes", doc_or_null(device.context_bytes)},
        {"device_used_start_bytes", device.device_used_start_bytes},
        {"device_used_peak_bytes", device.device_used_peak_bytes},
        {"device_used_end_bytes", device.device_used_end_bytes},
        {"unmapped_peak_bytes", device.unmapped_peak_bytes},
        {"bounded_by_device_used", device.bounded_by_device_used},
    });
  }
  DocJson processes = DocJson::array();
  for (const RunDocProcess& process : document.processes) {
    processes.push_back({{"pid", doc_or_null(process.pid)},
                         {"nvml_pid", process.nvml_pid},
                         {"name", process.name},
                         {"device", process.device},
                         {"mode", process.mode},
                         {"reason", doc_or_null(process.reason)},
                         {"sampled_peak_bytes", process.sampled_peak_bytes},
                         {"rank", doc_or_null(process.rank)},
                         {"local_rank", doc_or_null(process.local_rank)}});
  }
  DocJson ranks = DocJson::array();
  for (const RunDocRank& rank : document.ranks) {
    DocJson devices_of_rank = DocJson::array();
    for (const RunDocRankDevice& cell : rank.devices) {
      devices_of_rank.push_back({{"device", cell.device},
                                 {"uuid", cell.uuid},
                                 {"peak_bytes", cell.peak_bytes},
                                 {"measured", cell.measured}});
    }
    ranks.push_back({
        {"rank", doc_or_null(rank.rank)},
        {"local_rank", doc_or_null(rank.local_rank)},
        {"pids", rank.pids},
        {"peak_bytes", rank.peak_bytes},
        {"device", doc_or_null(rank.device)},
        {"uuid", doc_or_null(rank.uuid)},
        {"measured", rank.measured},
        {"devices", devices_of_rank},
    });
  }
  DocJson budgets = DocJson::array();
  for (const RunDocBudget& budget : document.budgets) {
    budgets.push_back({{"device", budget.device},
                       {"budget_bytes", budget.budget_bytes},
                       {"peak_bytes", budget.peak_bytes},
                       {"exceeded", budget.exceeded},
                       {"measured", budget.measured},
                       {"may_be_higher", budget.may_be_higher},
                       {"peak_at_most_bytes", doc_or_null(budget.peak_at_most_bytes)}});
  }
  DocJson own;
  if (document.gpumem_rank) {
    own = {{"rank", doc_or_null(document.gpumem_rank->rank)},
           {"local_rank", doc_or_null(document.gpumem_rank->local_rank)},
           {"variable", document.gpumem_rank->variable}};
  }
  const RunDocPidNamespace& pid_namespace = document.pid_namespace;
  DocJson out = {{"schema", kRunSchema},
                 {"command", document.command},
                 {"exit_code", document.exit_code},
                 {"signal", doc_or_null(document.signal)},
                 {"elapsed_s", document.elapsed_s}};
  // Older files have no times: what is read without them is written without them.
  if (document.start_unix_s) out["start_unix_s"] = *document.start_unix_s;
  if (document.end_unix_s) out["end_unix_s"] = *document.end_unix_s;
  out["mode"] = document.mode;
  out["requested_mode"] = document.requested_mode;
  out["fallback_reason"] = doc_or_null(document.fallback_reason);
  out["exact_processes"] = document.exact_processes;
  out["escaped_processes"] = document.escaped_processes;
  out["descendants_running"] = document.descendants_running;
  out["descendants_waited"] = document.descendants_waited;
  out["interval_s"] = document.interval_s;
  out["samples"] = document.samples;
  out["devices"] = std::move(devices);
  out["processes"] = std::move(processes);
  out["pid_namespace"] = {{"nvml_pids", pid_namespace.nvml_pids},
                          {"reason", doc_or_null(pid_namespace.reason)},
                          {"matched", pid_namespace.matched},
                          {"unmatched", pid_namespace.unmatched},
                          {"nested", pid_namespace.nested}};
  out["host"] = document.host;
  out["gpumem_rank"] = std::move(own);
  out["ranks"] = std::move(ranks);
  // --max-peak: each budgeted device's verdict (an empty list without budgets).
  out["budgets"] = std::move(budgets);
  out["budget_exceeded"] = document.budget_exceeded;
  return out;
}

std::string run_document_text(const RunDocument& document) {
  // Names (hosts, processes) may hold bytes that are not UTF-8: written as U+FFFD, never a crash.
  return run_document_json(document).dump(2, ' ', false, DocJson::error_handler_t::replace) + "\n";
}

}  // namespace gpumem::run
