// The comparison itself: devices matched by UUID (else by ordinal), ranks by their numbers,
// stacks by their frames' functions and files; each change sorted by growth.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "attribution/stacks.hpp"
#include "diff/diff.hpp"
#include "format.hpp"
#include "gpumem/internal/byte_size.hpp"
#include "job_report.hpp"

namespace gpumem::cli::diff {
namespace {

std::string device_label(const DevicePeak& device) {
  std::string label = "GPU " + std::to_string(device.ordinal);
  if (!device.name.empty()) label += " (" + device.name + ")";
  return device.node.empty() ? label : device.node + ": " + label;
}

std::string file_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

template <typename Entry>
void sort_by_growth(std::vector<Entry>& entries, Change Entry::*change) {
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    return (a.*change).delta() > (b.*change).delta();
  });
}

std::vector<DeviceChange> match_devices(const Diff& diff, const Input& before, const Input& after,
                                        std::vector<std::string>& notes) {
  const std::size_t none = before.devices.size();
  std::vector<std::size_t> partner(after.devices.size(), none);
  std::vector<std::string> how(after.devices.size());
  std::vector<bool> taken(before.devices.size(), false);
  // Each side's devices by UUID and by node and ordinal, in their order: each match is the first
  // device not taken yet, found through a hash (linear in the devices, however many).
  std::unordered_map<std::string, std::deque<std::size_t>> by_uuid;
  std::map<std::pair<std::string, int>, std::deque<std::size_t>> by_ordinal;
  for (std::size_t a = 0; a < before.devices.size(); ++a) {
    if (!before.devices[a].uuid.empty()) by_uuid[before.devices[a].uuid].push_back(a);
    by_ordinal[{before.devices[a].node, before.devices[a].ordinal}].push_back(a);
  }
  auto take = [&](std::deque<std::size_t>& queue) {
    while (!queue.empty() && taken[queue.front()]) queue.pop_front();
    if (queue.empty()) return none;
    const std::size_t a = queue.front();
    queue.pop_front();
    taken[a] = true;
    return a;
  };
  // First by UUID: the same physical GPU, whatever its ordinal in either run.
  for (std::size_t b = 0; b < after.devices.size(); ++b) {
    if (after.devices[b].uuid.empty()) continue;
    const auto found = by_uuid.find(after.devices[b].uuid);
    if (found == by_uuid.end()) continue;
    if ((partner[b] = take(found->second)) != none) how[b] = "uuid";
  }
  // Then by ordinal (on the same node): the same work on another machine.
  for (std::size_t b = 0; b < after.devices.size(); ++b) {
    if (partner[b] != none) continue;
    const auto found = by_ordinal.find({after.devices[b].node, after.devices[b].ordinal});
    if (found == by_ordinal.end()) continue;
    if ((partner[b] = take(found->second)) != none) how[b] = "ordinal";
  }
  std::vector<DeviceChange> changes;
  const std::string a_name = file_name(diff.before_path), b_name = file_name(diff.after_path);
  for (std::size_t b = 0; b < after.devices.size(); ++b) {
    const DevicePeak& device = after.devices[b];
    DeviceChange change{device_label(device),
                        device.ordinal,
                        device.name,
                        device.node,
                        device.uuid,
                        how[b],
                        {std::nullopt, device.peak_bytes}};
    if (partner[b] != none) {
      const DevicePeak& old = before.devices[partner[b]];
      change.peak.before = old.peak_bytes;
      if (how[b] == "ordinal" && old.uuid != device.uuid) {
        notes.push_back(device_label(device) + " matched by ordinal: its UUID differs (" +
                        (old.uuid.empty() ? "none" : old.uuid) + " in " + a_name + ", " +
                        (device.uuid.empty() ? "none" : device.uuid) + " in " + b_name + ")");
      }
      if (old.name != device.name && !old.name.empty() && !device.name.empty())
        notes.push_back(device_label(device) + " is a " + old.name + " in " + a_name + ", a " +
                        device.name + " in " + b_name);
    } else {
      notes.push_back(device_label(device) + (device.uuid.empty() ? "" : " [" + device.uuid + "]") +
                      " is only in " + b_name);
    }
    changes.push_back(std::move(change));
  }
  for (std::size_t a = 0; a < before.devices.size(); ++a) {
    if (taken[a]) continue;
    const DevicePeak& device = before.devices[a];
    notes.push_back(device_label(device) + (device.uuid.empty() ? "" : " [" + device.uuid + "]") +
                    " is only in " + a_name);
    changes.push_back({device_label(device),
                       device.ordinal,
                       device.name,
                       device.node,
                       device.uuid,
                       "",
                       {device.peak_bytes, std::nullopt}});
  }
  sort_by_growth(changes, &DeviceChange::peak);
  return changes;
}

// A rank is named by its global rank alone; without one, by its local rank on its node.
std::string rank_key(const RankPeak& rank) {
  return rank.rank ? "r" + std::to_string(*rank.rank)
                   : "l" + std::to_string(rank.local_rank.value_or(-1)) + "@" + rank.node;
}

std::vector<RankChange> match_ranks(const Diff& diff, const Input& before, const Input& after,
                                    std::vector<std::string>& notes) {
  std::unordered_map<std::string, RankChange> by_key;
  std::vector<std::string> order;
  auto add = [&](const RankPeak& rank, bool is_after) {
    const std::string key = rank_key(rank);
    auto [at, inserted] = by_key.try_emplace(key);
    RankChange& change = at->second;
    if (inserted) {
      order.push_back(key);
      change.rank = rank.rank;
      change.local_rank = rank.local_rank;
      if (!rank.rank) change.node = rank.node;
      change.label = rank_label(rank.rank, rank.local_rank) +
                     (!rank.rank && !rank.node.empty() ? " on " + rank.node : "");
    }
    // A rank listed twice (two runs of one file set): its highest peak.
    std::optional<std::int64_t>& side = is_after ? change.peak.after : change.peak.before;
    side = std::max(side.value_or(0), rank.peak_bytes);
  };
  for (const RankPeak& rank : before.ranks) add(rank, false);
  for (const RankPeak& rank : after.ranks) add(rank, true);
  std::vector<RankChange> changes;
  std::vector<std::string> only_before, only_after;
  for (const std::string& key : order) {
    RankChange& change = by_key[key];
    if (!change.peak.after) only_before.push_back(change.label);
    if (!change.peak.before) only_after.push_back(change.label);
    changes.push_back(std::move(change));
  }
  auto list = [](const std::vector<std::string>& labels) {
    std::string text;
    for (const std::string& label : labels) text += (text.empty() ? "" : ", ") + label;
    return text;
  };
  if (!only_before.empty() || !only_after.empty()) {
    std::string note = "the ranks differ: " + std::to_string(before.ranks.size()) + " in " +
                       file_name(diff.before_path) + ", " + std::to_string(after.ranks.size()) +
                       " in " + file_name(diff.after_path);
    if (!only_before.empty())
      note += "; only in " + file_name(diff.before_path) + ": " + list(only_before);
    if (!only_after.empty())
      note += "; only in " + file_name(diff.after_path) + ": " + list(only_after);
    notes.push_back(note);
  }
  sort_by_growth(changes, &RankChange::peak);
  return changes;
}

// The snapshot whose stacks are compared: the highest peak, else the first out-of-memory failure.
const attribution::Snapshot* stack_snapshot(const attribution::Document& document) {
  std::optional<std::size_t> chosen = attribution::choose_snapshot(document, "peak", nullptr);
  if (!chosen) chosen = attribution::choose_snapshot(document, "oom", nullptr);
  return chosen ? &document.snapshots[*chosen] : nullptr;
}

// What matches a stack across documents: the library's stack identity (the frames the views show,
// by function and file, lines left out; a Python program's stacks by their Python frames).
std::string stack_key(const attribution::Document& document,
                      const std::optional<std::size_t>& stack) {
  if (!stack) return std::string("\x01no stack");
  return detail::attribution::stack_identity(document, document.stacks[*stack]);
}

std::vector<StackChange> match_stacks(const attribution::Document& before,
                                      const attribution::Document& after,
                                      std::vector<std::string>& notes) {
  std::map<std::string, StackChange> by_key;
  std::vector<std::string> order;
  auto add = [&](const attribution::Document& document, bool is_after) {
    const attribution::Snapshot* snapshot = stack_snapshot(document);
    if (snapshot == nullptr) {
      notes.push_back(file_name(document.path) + " holds no snapshot: no stacks to compare");
      return;
    }
    for (const attribution::StackTotal& total : attribution::stack_totals(*snapshot)) {
      const std::string key = stack_key(document, total.stack);
      auto [at, inserted] = by_key.try_emplace(key);
      StackChange& change = at->second;
      // Named as the later input names it (its lines are the code as it is now).
      if (inserted || (is_after && !change.bytes.after)) {
        if (inserted) order.push_back(key);
        if (!total.stack) {
          change.allocated_by = "(no stack captured)";
        } else if (const auto& stack = document.stacks[*total.stack]; stack.empty()) {
          change.allocated_by = "(an empty stack)";
        } else {
          change.allocated_by = attribution::frame_label(attribution::allocating(document, stack));
          change.called_from = attribution::callers(document, stack, " < ");
        }
      }
      // Stacks that differ only by line are one: their bytes summed.
      std::optional<std::int64_t>& side = is_after ? change.bytes.after : change.bytes.before;
      side = side.value_or(0) + total.bytes;
      (is_after ? change.blocks_after : change.blocks_before) += total.blocks;
    }
  };
  add(before, false);
  add(after, true);
  std::vector<StackChange> changes;
  for (const std::string& key : order) changes.push_back(std::move(by_key[key]));
  sort_by_growth(changes, &StackChange::bytes);
  return changes;
}

}  // namespace

std::optional<double> Change::percent() const {
  if (!before || *before <= 0) return std::nullopt;
  return 100.0 * static_cast<double>(delta()) / static_cast<double>(*before);
}

std::string change_word(const Change& change) {
  if (!change.before) return "appeared";
  if (!change.after) return "vanished";
  return change.delta() > 0 ? "grew" : change.delta() < 0 ? "shrank" : "unchanged";
}

Diff compare(const Input& before, const Input& after, const attribution::Document* before_stacks,
             const attribution::Document* after_stacks) {
  Diff diff;
  diff.before_path = before.path;
  diff.after_path = after.path;
  diff.schema = after.schema;
  diff.devices = match_devices(diff, before, after, diff.notes);
  diff.ranks = match_ranks(diff, before, after, diff.notes);
  if (before_stacks != nullptr && after_stacks != nullptr) {
    diff.has_stacks = true;
    diff.stacks = match_stacks(*before_stacks, *after_stacks, diff.notes);
  }
  return diff;
}

std::optional<Threshold> parse_threshold(const std::string& text, std::string* error) {
  Threshold threshold;
  threshold.text = text;
  if (!text.empty() && text.back() == '%') {
    const std::string number = text.substr(0, text.size() - 1);
    std::size_t used = 0;
    double value = -1;
    try {
      value = std::stod(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != number.size() || !std::isfinite(value) || value < 0) {
      if (error != nullptr) *error = text + ": not a percentage (e.g. 5%)";
      return std::nullopt;
    }
    threshold.percent = value;
    return threshold;
  }
  std::string why;
  const std::optional<std::uint64_t> bytes = gpumem::detail::parse_byte_size(text, &why);
  if (!bytes) {
    if (error != nullptr) *error = text + ": " + why + " (or a percentage: 5%)";
    return std::nullopt;
  }
  threshold.bytes = static_cast<std::int64_t>(*bytes);
  return threshold;
}

std::vector<const DeviceChange*> over_threshold(const Diff& diff, const Threshold& threshold) {
  std::vector<const DeviceChange*> over;
  for (const DeviceChange& device : diff.devices) {
    const std::int64_t delta = device.peak.delta();
    if (delta <= 0) continue;
    const bool exceeded =
        threshold.bytes ? delta > *threshold.bytes
                        : !device.peak.percent() || *device.peak.percent() > *threshold.percent;
    if (exceeded) over.push_back(&device);
  }
  return over;
}

}  // namespace gpumem::cli::diff
