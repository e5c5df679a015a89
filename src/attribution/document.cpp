// The gpumem.attribution/1 document (docs/attribution.md), written with nlohmann-json.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/procfs.hpp"

namespace gpumem {
namespace {

using Json = nlohmann::ordered_json;

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

template <class T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// The program's arguments, joined by spaces; empty when they cannot be read.
std::string command_line() {
  std::string joined;
  const auto arguments = procfs::command_line("/proc", "self");
  if (!arguments) return joined;
  for (const std::string& argument : *arguments) {
    if (!joined.empty()) joined += ' ';
    joined += argument;
  }
  return joined;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

Json frame_json(const StackFrame& frame) {
  Json out;
  out["function"] = or_null(frame.function);
  out["file"] = or_null(frame.file);
  out["line"] = or_null(frame.line);
  out["module"] = or_null(frame.module);
  out["address"] = frame.address ? Json(hex(*frame.address)) : Json(nullptr);
  out["language"] = frame.python ? "python" : "native";
  return out;
}

struct Merged {
  Json frames = Json::array();
  Json stacks = Json::array();
  std::map<std::string, std::size_t> frame_index;  // by the frame's JSON text
  std::map<std::string, std::size_t> stack_index;
};

// Each snapshot's stacks, re-indexed into the document's (frames and stacks once each).
std::vector<std::size_t> merge(const AttributionSnapshot& snapshot, Merged& merged) {
  std::vector<std::size_t> frame_map;
  for (const StackFrame& frame : snapshot.frames) {
    Json json = frame_json(frame);
    const std::string key = json.dump();
    const auto [it, added] = merged.frame_index.emplace(key, merged.frames.size());
    if (added) merged.frames.push_back(std::move(json));
    frame_map.push_back(it->second);
  }
  std::vector<std::size_t> stack_map;
  for (const auto& stack : snapshot.stacks) {
    Json json = Json::array();
    for (const std::size_t frame : stack) {
      if (frame < frame_map.size()) json.push_back(frame_map[frame]);
    }
    const std::string key = json.dump();
    const auto [it, added] = merged.stack_index.emplace(key, merged.stacks.size());
    if (added) merged.stacks.push_back(std::move(json));
    stack_map.push_back(it->second);
  }
  return stack_map;
}

Json stack_ref(const std::optional<std::size_t>& stack, const std::vector<std::size_t>& map) {
  return stack && *stack < map.size() ? Json(map[*stack]) : Json(nullptr);
}

Json snapshot_json(const AttributionSnapshot& snapshot, const std::vector<std::size_t>& map) {
  Json out;
  out["what"] = snapshot.what;
  out["scope"] = or_null(snapshot.scope);
  out["pid"] = snapshot.pid;
  out["device"] = snapshot.device;
  out["time_s"] = snapshot.time_s;
  out["monotonic_ns"] = snapshot.monotonic_ns;
  out["level_bytes"] = snapshot.level_bytes;
  out["live_bytes"] = snapshot.live_bytes;
  out["attributed"] = snapshot.attributed;
  Json blocks = Json::array();
  for (const LiveBlock& block : snapshot.blocks) {
    Json item;
    item["address"] = hex(block.address);
    item["bytes"] = block.bytes;
    item["kind"] = std::string(to_string(block.kind));
    item["age_s"] = block.age_s;
    item["stack"] = stack_ref(block.stack, map);
    item["pid"] = block.pid;
    blocks.push_back(std::move(item));
  }
  out["blocks"] = std::move(blocks);
  if (snapshot.failure) {
    const AllocationFailure& failure = *snapshot.failure;
    out["failure"] = {{"bytes", failure.bytes},
                      {"kind", std::string(to_string(failure.kind))},
                      {"stack", stack_ref(failure.stack, map)},
                      {"error", failure.error},
                      {"free_bytes", failure.free_bytes},
                      {"total_bytes", failure.total_bytes}};
  } else {
    out["failure"] = nullptr;
  }
  Json others = Json::array();
  for (const OtherProcess& process : snapshot.other_processes) {
    others.push_back(
        {{"pid", process.pid}, {"name", process.name}, {"used_bytes", process.used_bytes}});
  }
  out["other_processes"] = std::move(others);
  out["other_processes_age_s"] =
      snapshot.other_processes_age_s ? Json(*snapshot.other_processes_age_s) : Json(nullptr);
  return out;
}

}  // namespace

std::string attribution_json(const std::vector<AttributionSnapshot>& snapshots) {
  Json document;
  document["schema"] = "gpumem.attribution/1";
  document["command"] = command_line();
  document["host"] = host_name();
  Json devices = Json::array();
  std::map<int, bool> seen;
  for (const AttributionSnapshot& snapshot : snapshots) {
    const SnapshotDevice& device = snapshot.device_identity;
    if (!seen.emplace(snapshot.device, true).second) continue;
    devices.push_back({{"ordinal", snapshot.device},
                       {"uuid", device.uuid.empty() ? Json(nullptr) : Json(device.uuid)},
                       {"name", device.name.empty() ? Json(nullptr) : Json(device.name)},
                       {"total_bytes", device.total_bytes}});
  }
  document["devices"] = std::move(devices);
  Merged merged;
  Json list = Json::array();
  for (const AttributionSnapshot& snapshot : snapshots) {
    const std::vector<std::size_t> map = merge(snapshot, merged);
    list.push_back(snapshot_json(snapshot, map));
  }
  document["frames"] = std::move(merged.frames);
  document["stacks"] = std::move(merged.stacks);
  document["snapshots"] = std::move(list);
  document["timeline"] = Json::array();
  // A symbol that is not UTF-8 is written as U+FFFD rather than failing the document.
  return document.dump(1, ' ', false, Json::error_handler_t::replace);
}

std::string AttributionSnapshot::to_json() const {
  return attribution_json({*this});
}

}  // namespace gpumem
