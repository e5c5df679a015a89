#include "attribution/document.hpp"

namespace gpumem::cli::attribution {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

nlohmann::ordered_json document_json(const Document& document) {
  Json devices = Json::array();
  for (const Device& device : document.devices)
    devices.push_back({{"ordinal", device.ordinal},
                       {"uuid", device.uuid},
                       {"name", device.name},
                       {"total_bytes", device.total_bytes}});
  Json frames = Json::array();
  for (const Frame& frame : document.frames)
    frames.push_back({{"function", or_null(frame.function)},
                      {"file", or_null(frame.file)},
                      {"line", or_null(frame.line)},
                      {"module", or_null(frame.module)},
                      {"address", or_null(frame.address)},
                      {"language", frame.language}});
  Json stacks = Json::array();
  for (const auto& stack : document.stacks) stacks.push_back(stack);
  Json snapshots = Json::array();
  for (const Snapshot& snapshot : document.snapshots) {
    Json blocks = Json::array();
    for (const Block& block : snapshot.blocks)
      blocks.push_back({{"address", block.address},
                        {"bytes", block.bytes},
                        {"kind", block.kind},
                        {"age_s", block.age_s},
                        {"stack", or_null(block.stack)},
                        {"pid", or_null(block.pid)}});
    Json failure = nullptr;
    if (snapshot.failure) {
      const Failure& entry = *snapshot.failure;
      failure = {{"bytes", entry.bytes},           {"kind", entry.kind},
                 {"stack", or_null(entry.stack)},  {"error", entry.error},
                 {"free_bytes", entry.free_bytes}, {"total_bytes", entry.total_bytes}};
    }
    Json others = Json::array();
    for (const OtherProcess& process : snapshot.other_processes) {
      Json other = {{"pid", process.pid},
                    {"name", process.name},
                    {"used_bytes", or_null(process.used_bytes)}};
      if (process.in_run) other["in_run"] = *process.in_run;
      if (process.in_run) other["rank"] = or_null(process.rank);
      others.push_back(std::move(other));
    }
    snapshots.push_back({{"what", snapshot.what},
                         {"scope", or_null(snapshot.scope)},
                         {"pid", or_null(snapshot.pid)},
                         {"device", snapshot.device},
                         {"time_s", snapshot.time_s},
                         {"monotonic_ns", or_null(snapshot.monotonic_ns)},
                         {"level_bytes", snapshot.level_bytes},
                         {"live_bytes", snapshot.live_bytes},
                         {"blocks", std::move(blocks)},
                         {"failure", std::move(failure)},
                         {"other_processes", std::move(others)},
                         {"other_processes_age_s", or_null(snapshot.other_processes_age_s)}});
  }
  Json timeline = Json::array();
  for (const Timeline& series : document.timeline) {
    Json steps = Json::array();
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

}  // namespace gpumem::cli::attribution
