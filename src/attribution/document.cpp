// The library's snapshots as a gpumem.attribution/1 document: converted into the one model
// (gpumem/internal/attribution_document.hpp) and written by its one writer.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"
#include "gpumem/internal/procfs.hpp"

namespace gpumem::detail::attribution {
namespace {

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
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

Frame model_frame(const StackFrame& frame) {
  Frame out;
  out.function = frame.function;
  out.file = frame.file;
  if (frame.line) out.line = *frame.line;
  out.module = frame.module;
  if (frame.address) out.address = hex(*frame.address);
  out.language = frame.python ? "python" : "native";
  return out;
}

// Frames and stacks of every snapshot, each distinct one once.
struct Merged {
  using FrameKey = std::tuple<std::optional<std::string>, std::optional<std::string>,
                              std::optional<std::int64_t>, std::optional<std::string>,
                              std::optional<std::string>, std::string>;
  std::map<FrameKey, std::size_t> frame_index;
  std::map<std::vector<std::size_t>, std::size_t> stack_index;
};

// The snapshot's stacks as indices into the document's.
std::vector<std::size_t> merge(const AttributionSnapshot& snapshot, Document& document,
                               Merged& merged) {
  std::vector<std::size_t> frame_map;
  for (const StackFrame& frame : snapshot.frames) {
    Frame model = model_frame(frame);
    Merged::FrameKey key{model.function, model.file,    model.line,
                         model.module,   model.address, model.language};
    const auto [it, added] = merged.frame_index.emplace(std::move(key), document.frames.size());
    if (added) document.frames.push_back(std::move(model));
    frame_map.push_back(it->second);
  }
  std::vector<std::size_t> stack_map;
  for (const auto& stack : snapshot.stacks) {
    std::vector<std::size_t> frames;
    for (const std::size_t frame : stack) {
      if (frame < frame_map.size()) frames.push_back(frame_map[frame]);
    }
    const auto [it, added] = merged.stack_index.emplace(frames, document.stacks.size());
    if (added) document.stacks.push_back(std::move(frames));
    stack_map.push_back(it->second);
  }
  return stack_map;
}

std::optional<std::size_t> stack_ref(const std::optional<std::size_t>& stack,
                                     const std::vector<std::size_t>& map) {
  if (stack && *stack < map.size()) return map[*stack];
  return std::nullopt;
}

std::int64_t bytes(std::uint64_t value) {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(value, static_cast<std::uint64_t>(INT64_MAX)));
}

Snapshot model_snapshot(const AttributionSnapshot& snapshot, const std::vector<std::size_t>& map) {
  Snapshot out;
  out.what = snapshot.what;
  out.scope = snapshot.scope;
  out.pid = snapshot.pid;
  out.device = snapshot.device;
  out.time_s = snapshot.time_s;
  out.monotonic_ns = snapshot.monotonic_ns;
  out.level_bytes = snapshot.level_bytes;
  out.live_bytes = snapshot.live_bytes;
  out.attributed = snapshot.attributed;
  for (const LiveBlock& block : snapshot.blocks) {
    out.blocks.push_back({hex(block.address), bytes(block.bytes),
                          std::string(to_string(block.kind)), block.age_s,
                          stack_ref(block.stack, map), block.pid});
  }
  if (snapshot.failure) {
    const AllocationFailure& failure = *snapshot.failure;
    out.failure = Failure{bytes(failure.bytes),          std::string(to_string(failure.kind)),
                          stack_ref(failure.stack, map), failure.error,
                          bytes(failure.free_bytes),     bytes(failure.total_bytes)};
  }
  for (const gpumem::OtherProcess& process : snapshot.other_processes) {
    OtherProcess other;
    other.pid = process.pid;
    other.name = process.name;
    other.used_bytes = bytes(process.used_bytes);
    out.other_processes.push_back(std::move(other));
  }
  out.other_processes_age_s = snapshot.other_processes_age_s;
  return out;
}

}  // namespace

Frame document_frame(const StackFrame& frame) {
  return model_frame(frame);
}

Document to_document(const std::vector<AttributionSnapshot>& snapshots) {
  Document document;
  document.command = command_line();
  document.host = host_name();
  for (const AttributionSnapshot& snapshot : snapshots) {
    if (document.device(snapshot.device) != nullptr) continue;
    const SnapshotDevice& device = snapshot.device_identity;
    document.devices.push_back(
        {snapshot.device, device.uuid, device.name, bytes(device.total_bytes)});
  }
  Merged merged;
  for (const AttributionSnapshot& snapshot : snapshots) {
    const std::vector<std::size_t> map = merge(snapshot, document, merged);
    document.snapshots.push_back(model_snapshot(snapshot, map));
  }
  return document;
}

}  // namespace gpumem::detail::attribution

namespace gpumem {

std::string attribution_json(const std::vector<AttributionSnapshot>& snapshots) {
  return detail::attribution::document_text(detail::attribution::to_document(snapshots));
}

std::string AttributionSnapshot::to_json() const {
  return attribution_json({*this});
}

}  // namespace gpumem
