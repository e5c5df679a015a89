// gpumem.report/1 written from its model: the one writer of the format (report_document.hpp).
#include "gpumem/internal/report_document.hpp"

namespace gpumem::run {
namespace {

using ReportJson = nlohmann::ordered_json;

template <typename T>
ReportJson report_or_null(const std::optional<T>& value) {
  return value ? ReportJson(*value) : ReportJson(nullptr);
}

ReportJson report_rank_reference(const JobReport& report, const std::optional<std::size_t>& index) {
  if (!index) return ReportJson();
  const JobRank& rank = report.ranks[*index];
  return {{"rank", report_or_null(rank.rank)}, {"local_rank", report_or_null(rank.local_rank)}};
}

}  // namespace

nlohmann::ordered_json report_document_json(const JobReport& report) {
  ReportJson inputs = ReportJson::array();
  for (const JobInput& input : report.inputs) {
    inputs.push_back({{"file", input.path},
                      {"node", input.node},
                      {"gpumem_rank", report_or_null(input.gpumem_rank)},
                      {"mode", input.mode},
                      {"exit_code", input.exit_code},
                      {"elapsed_s", input.elapsed_s},
                      {"start_unix_s", report_or_null(input.start_unix_s)},
                      {"end_unix_s", report_or_null(input.end_unix_s)}});
  }
  ReportJson ranks = ReportJson::array();
  for (const JobRank& rank : report.ranks) {
    ranks.push_back(
        {{"rank", report_or_null(rank.rank)},
         {"local_rank", report_or_null(rank.local_rank)},
         {"node", rank.node},
         {"file", rank.file},
         {"device", report_or_null(rank.device)},
         {"device_key", rank.device_key.empty() ? ReportJson() : ReportJson(rank.device_key)},
         {"name", rank.device_name},
         {"peak_bytes", rank.peak_bytes},
         {"measured", rank.measured}});
  }
  ReportJson devices = ReportJson::array();
  for (const JobDevice& device : report.devices) {
    devices.push_back({{"key", device.key},
                       {"uuid", device.uuid.empty() ? ReportJson() : ReportJson(device.uuid)},
                       {"node", device.node},
                       {"nvml_index", report_or_null(device.nvml_index)},
                       {"device", device.device},
                       {"name", device.name},
                       {"total_bytes", device.total_bytes},
                       {"peak_bytes", device.peak_bytes},
                       {"runs_using", device.runs_using},
                       {"combined", to_string(device.combined)},
                       {"runs_summed", device.runs_summed},
                       {"top_rank", report_rank_reference(report, device.top_rank)}});
  }
  ReportJson nodes = ReportJson::array();
  for (const JobNode& node : report.nodes) {
    nodes.push_back(
        {{"node", node.name},
         {"runs", node.runs},
         {"ranks", node.ranks},
         {"devices_used", node.devices_used},
         {"mode", node.mode},
         {"peak_bytes", node.peak_bytes},
         {"peak_device",
          node.peak_device ? ReportJson(report.devices[*node.peak_device].key) : ReportJson()},
         {"peak_rank", node.peak_device ? report_rank_reference(
                                              report, report.devices[*node.peak_device].top_rank)
                                        : ReportJson()}});
  }
  ReportJson maximum;
  if (report.maximum) {
    const JobDevice& device = report.devices[*report.maximum];
    maximum = {{"peak_bytes", device.peak_bytes},
               {"node", device.node},
               {"device_key", device.key},
               {"device", device.device},
               {"name", device.name},
               {"rank", report_rank_reference(report, device.top_rank)},
               {"runs_using", device.runs_using},
               {"combined", to_string(device.combined)},
               {"runs_summed", device.runs_summed}};
  }
  return {{"schema", kReportSchema},
          {"quantity", report.quantity},
          {"mode", report.mode},
          {"maximum", maximum},
          {"inputs", inputs},
          {"ranks", ranks},
          {"nodes", nodes},
          {"devices", devices},
          {"warnings", report.warnings}};
}

std::string report_document_text(const JobReport& report) {
  // File and host names may hold bytes that are not UTF-8: U+FFFD in the JSON, never a crash.
  return report_document_json(report).dump(2, ' ', false, ReportJson::error_handler_t::replace) +
         "\n";
}

}  // namespace gpumem::run
