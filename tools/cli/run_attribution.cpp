// The attribution of a `gpumem run` (run_attribution.hpp).
#include "run_attribution.hpp"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "attribution/views.hpp"
#include "output_file.hpp"

namespace gpumem::cli {

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

}  // namespace

attribution::Document combine_attribution(const std::string& folder, const std::string& command,
                                          const std::string& host,
                                          const std::vector<DeviceInfo>& devices,
                                          const std::vector<TimelineRow>& timeline,
                                          std::vector<std::string>* warnings) {
  attribution::Document document;
  document.command = command;
  document.host = host;
  std::vector<std::string> files;
  std::error_code code;
  for (const auto& entry : std::filesystem::directory_iterator(folder, code)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());  // oom-PID before peak-PID, by pid: one order each run
  for (const std::string& file : files) {
    std::string error;
    std::optional<attribution::Document> part = attribution::read_document(file, &error);
    if (!part) {
      warnings->push_back("a measured process's attribution snapshot was unreadable: " + error);
      continue;
    }
    append(document, std::move(*part));
  }
  std::vector<int> ordinals;
  for (const attribution::Snapshot& snapshot : document.snapshots) {
    ordinals.push_back(snapshot.device);
  }
  std::vector<attribution::Timeline> tracks;
  for (const TimelineRow& row : timeline) {
    if (row.series != Series::exact) continue;
    auto track = std::find_if(tracks.begin(), tracks.end(), [&](const attribution::Timeline& t) {
      return t.device == row.device;
    });
    if (track == tracks.end()) {
      tracks.push_back({row.device, {}});
      track = tracks.end() - 1;
    }
    track->steps.emplace_back(row.time_s, row.bytes);
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
    for (const DeviceInfo& info : devices) {
      if (info.ordinal != ordinal) continue;
      device.uuid = info.uuid;
      device.name = info.name;
      device.total_bytes = static_cast<std::int64_t>(info.memory.total);
    }
    document.devices.push_back(std::move(device));
  }
  return document;
}

std::string attribution_summary(const attribution::Document& document, std::size_t top) {
  std::string text;
  std::string error;
  attribution::TextOptions options;
  if (const auto peak = attribution::choose_snapshot(document, "peak", &error)) {
    const attribution::Snapshot& snapshot = document.snapshots[*peak];
    text += "\ngpumem: at the highest process peak, who held the memory:\n";
    text += attribution::top_table(document, snapshot, top, options);
  }
  for (const attribution::Snapshot& snapshot : document.snapshots) {
    if (snapshot.what != "oom") continue;
    text += "\ngpumem: an allocation ran out of memory; who held the memory then:\n";
    text += attribution::top_table(document, snapshot, top, options);
  }
  return text;
}

}  // namespace gpumem::cli
