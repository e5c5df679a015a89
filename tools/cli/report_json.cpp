#include "json_null.hpp"
#include "report_output.hpp"

namespace gpumem::cli {
namespace {

using Json = nlohmann::ordered_json;

Json rank_reference(const JobReport& report, const std::optional<std::size_t>& index) {
  if (!index) return Json();
  const JobRank& rank = report.ranks[*index];
  return {{"rank", json_or_null(rank.rank)}, {"local_rank", json_or_null(rank.local_rank)}};
}

}  // namespace

nlohmann::ordered_json report_json(const JobReport& report) {
  Json inputs = Json::array();
  for (const JobInput& input : report.inputs) {
    inputs.push_back({{"file", input.path},
                      {"node", input.node},
                      {"gpumem_rank", json_or_null(input.gpumem_rank)},
                      {"mode", input.mode},
                      {"exit_code", input.exit_code},
                      {"elapsed_s", input.elapsed_s},
                      {"start_unix_s", json_or_null(input.start_unix_s)},
                      {"end_unix_s", json_or_null(input.end_unix_s)}});
  }
  Json ranks = Json::array();
  for (const JobRank& rank : report.ranks) {
    ranks.push_back({{"rank", json_or_null(rank.rank)},
                     {"local_rank", json_or_null(rank.local_rank)},
                     {"node", rank.node},
                     {"file", rank.file},
                     {"device", json_or_null(rank.device)},
                     {"device_key", rank.device_key.empty() ? Json() : Json(rank.device_key)},
                     {"name", rank.device_name},
                     {"peak_bytes", rank.peak_bytes},
                     {"measured", rank.measured}});
  }
  Json devices = Json::array();
  for (const JobDevice& device : report.devices) {
    devices.push_back({{"key", device.key},
                       {"uuid", device.uuid.empty() ? Json() : Json(device.uuid)},
                       {"node", device.node},
                       {"nvml_index", json_or_null(device.nvml_index)},
                       {"device", device.device},
                       {"name", device.name},
                       {"total_bytes", device.total_bytes},
                       {"peak_bytes", device.peak_bytes},
                       {"runs_using", device.runs_using},
                       {"combined", to_string(device.combined)},
                       {"runs_summed", device.runs_summed},
                       {"top_rank", rank_reference(report, device.top_rank)}});
  }
  Json nodes = Json::array();
  for (const JobNode& node : report.nodes) {
    nodes.push_back(
        {{"node", node.name},
         {"runs", node.runs},
         {"ranks", node.ranks},
         {"devices_used", node.devices_used},
         {"mode", node.mode},
         {"peak_bytes", node.peak_bytes},
         {"peak_device", node.peak_device ? Json(report.devices[*node.peak_device].key) : Json()},
         {"peak_rank", node.peak_device
                           ? rank_reference(report, report.devices[*node.peak_device].top_rank)
                           : Json()}});
  }
  Json maximum;
  if (report.maximum) {
    const JobDevice& device = report.devices[*report.maximum];
    maximum = {{"peak_bytes", device.peak_bytes},
               {"node", device.node},
               {"device_key", device.key},
               {"device", device.device},
               {"name", device.name},
               {"rank", rank_reference(report, device.top_rank)},
               {"runs_using", device.runs_using},
               {"combined", to_string(device.combined)},
               {"runs_summed", device.runs_summed}};
  }
  return {{"schema", "gpumem.report/1"},
          {"quantity", "process_footprint"},
          {"mode", report.mode},
          {"maximum", maximum},
          {"inputs", inputs},
          {"ranks", ranks},
          {"nodes", nodes},
          {"devices", devices},
          {"warnings", report.warnings}};
}

}  // namespace gpumem::cli
