// The one writer of gpumem.attribution/1: the model as JSON (docs/attribution.md).
#include "gpumem/internal/attribution_document.hpp"

namespace gpumem::detail::attribution {
namespace {

using OrderedJson = nlohmann::ordered_json;

// An optional value: the value, or null when there is none (the format's one spelling of
// "absent").
template <typename T>
OrderedJson json_or_null(const std::optional<T>& value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}
// A text that is empty where it could not be read: null then.
OrderedJson text_or_null(const std::string& text) {
  return text.empty() ? OrderedJson(nullptr) : OrderedJson(text);
}

}  // namespace

nlohmann::ordered_json document_json(const Document& document) {
  OrderedJson devices = OrderedJson::array();
  for (const Device& device : document.devices)
    devices.push_back({{"ordinal", device.ordinal},
                       {"uuid", text_or_null(device.uuid)},
                       {"name", text_or_null(device.name)},
                       {"total_bytes", device.total_bytes}});
  OrderedJson frames = OrderedJson::array();
  for (const Frame& frame : document.frames)
    frames.push_back({{"function", json_or_null(frame.function)},
                      {"file", json_or_null(frame.file)},
                      {"line", json_or_null(frame.line)},
                      {"module", json_or_null(frame.module)},
                      {"address", json_or_null(frame.address)},
                      {"language", frame.language}});
  OrderedJson stacks = OrderedJson::array();
  for (const auto& stack : document.stacks) stacks.push_back(stack);
  OrderedJson snapshots = OrderedJson::array();
  for (const Snapshot& snapshot : document.snapshots) {
    OrderedJson blocks = OrderedJson::array();
    for (const Block& block : snapshot.blocks)
      blocks.push_back({{"address", block.address},
                        {"bytes", block.bytes},
                        {"kind", block.kind},
                        {"age_s", block.age_s},
                        {"stack", json_or_null(block.stack)},
                        {"pid", json_or_null(block.pid)}});
    OrderedJson failure = nullptr;
    if (snapshot.failure) {
      const Failure& entry = *snapshot.failure;
      failure = {{"bytes", entry.bytes},
                 {"kind", entry.kind},
                 {"stack", json_or_null(entry.stack)},
                 {"error", entry.error},
                 {"free_bytes", entry.free_bytes},
                 {"total_bytes", entry.total_bytes}};
    }
    OrderedJson others = OrderedJson::array();
    for (const OtherProcess& process : snapshot.other_processes) {
      OrderedJson other = {{"pid", process.pid},
                           {"name", process.name},
                           {"used_bytes", json_or_null(process.used_bytes)}};
      if (process.in_run) other["in_run"] = *process.in_run;
      if (process.in_run) other["rank"] = json_or_null(process.rank);
      others.push_back(std::move(other));
    }
    OrderedJson entry = {{"what", snapshot.what},
                         {"scope", json_or_null(snapshot.scope)},
                         {"pid", json_or_null(snapshot.pid)},
                         {"device", snapshot.device},
                         {"time_s", snapshot.time_s},
                         {"monotonic_ns", json_or_null(snapshot.monotonic_ns)},
                         {"level_bytes", snapshot.level_bytes},
                         {"live_bytes", snapshot.live_bytes},
                         {"context_bytes", json_or_null(snapshot.context_bytes)},
                         {"blocks", std::move(blocks)},
                         {"failure", std::move(failure)},
                         {"other_processes", std::move(others)},
                         {"other_processes_age_s", json_or_null(snapshot.other_processes_age_s)}};
    if (snapshot.attributed) entry["attributed"] = *snapshot.attributed;
    snapshots.push_back(std::move(entry));
  }
  OrderedJson timeline = OrderedJson::array();
  for (const Timeline& series : document.timeline) {
    OrderedJson steps = OrderedJson::array();
    for (const auto& [time, bytes] : series.steps) steps.push_back({time, bytes});
    timeline.push_back({{"device", series.device}, {"steps", std::move(steps)}});
  }
  return {{"schema", kSchema},
          {"command", document.command},
          {"host", document.host},
          {"devices", std::move(devices)},
          {"frames", std::move(frames)},
          {"stacks", std::move(stacks)},
          {"snapshots", std::move(snapshots)},
          {"timeline", std::move(timeline)}};
}

std::string document_text(const Document& document) {
  return document_json(document).dump(1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace gpumem::detail::attribution
