// A job's report from its run files (report_document.hpp): the peaks per rank, node and device,
// and the job's headline, decided here once for every view.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "gpumem/internal/report_document.hpp"

namespace gpumem::run {
namespace {

std::string report_mode_of(const std::vector<std::string>& modes) {
  if (modes.empty()) return "sampled";
  if (std::all_of(modes.begin(), modes.end(), [](const std::string& m) { return m == "exact"; }))
    return "exact";
  if (std::all_of(modes.begin(), modes.end(), [](const std::string& m) { return m == "sampled"; }))
    return "sampled";
  return "mixed";
}

std::string report_node_of(const RunFile& file) {
  return file.run.host.empty() ? "(" + file.path + ")" : file.run.host;
}

std::string report_device_key(const std::string& node, const RunDocDevice& device) {
  if (!device.uuid.empty()) return device.uuid;
  return node + ":" +
         (device.nvml_index ? std::to_string(*device.nvml_index)
                            : "cuda" + std::to_string(device.device));
}

const RunDocDevice* report_rank_device(const RunDocument& run, const RunDocRank& rank) {
  for (const RunDocDevice& device : run.devices) {
    if (rank.uuid && !rank.uuid->empty() ? device.uuid == *rank.uuid : rank.device == device.device)
      return &device;
  }
  return nullptr;
}

}  // namespace

// A device's figure from the runs that used it: a sweep over their time spans, the highest sum
// of the peaks of the runs alive at one moment (a span that ends when another starts counts as
// overlapping it: the bound stays on the safe side).
void combine_usages(JobDevice& device, const std::vector<RunUsage>& usages) {
  device.runs_using = static_cast<int>(usages.size());
  device.peak_bytes = 0;
  device.runs_summed = 0;
  if (usages.empty()) return;
  if (usages.size() == 1) {
    device.combined = JobDevice::Combined::one;
    device.peak_bytes = usages.front().peak;
    device.runs_summed = 1;
    return;
  }
  const bool timed = std::all_of(usages.begin(), usages.end(),
                                 [](const RunUsage& usage) { return usage.start && usage.end; });
  if (!timed) {
    device.combined = JobDevice::Combined::overlap_unknown;
    for (const RunUsage& usage : usages) device.peak_bytes += usage.peak;
    device.runs_summed = device.runs_using;
    return;
  }
  struct Event {
    double time;
    bool start;
    std::int64_t peak;
  };
  std::vector<Event> events;
  for (const RunUsage& usage : usages) {
    events.push_back({*usage.start, true, usage.peak});
    events.push_back({*usage.end, false, usage.peak});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.start > b.start;  // starts first
  });
  std::int64_t level = 0;
  int alive = 0;
  for (const Event& event : events) {
    level += event.start ? event.peak : -event.peak;
    alive += event.start ? 1 : -1;
    if (event.start && level > device.peak_bytes) {
      device.peak_bytes = level;
      device.runs_summed = alive;
    }
  }
  device.combined =
      device.runs_summed > 1 ? JobDevice::Combined::sum : JobDevice::Combined::highest;
}

const char* to_string(JobDevice::Combined combined) {
  switch (combined) {
    case JobDevice::Combined::one:
      return "one_run";
    case JobDevice::Combined::highest:
      return "highest";
    case JobDevice::Combined::sum:
      return "sum";
    case JobDevice::Combined::overlap_unknown:
      return "sum_overlap_unknown";
  }
  return "?";
}

JobReport combine_runs(const std::vector<RunFile>& runs) {
  JobReport report;
  std::vector<std::string> modes;
  std::unordered_map<std::string, std::size_t> device_index;
  std::vector<std::vector<RunUsage>> usages;  // per device
  for (const RunFile& file : runs) {
    const RunDocument& run = file.run;
    const std::string node = report_node_of(file);
    report.inputs.push_back({file.path, node, run.mode,
                             run.gpumem_rank ? run.gpumem_rank->rank : std::nullopt, run.exit_code,
                             run.elapsed_s, run.start_unix_s, run.end_unix_s});
    modes.push_back(run.mode);
    for (const RunDocDevice& device : run.devices) {
      const std::string key = report_device_key(node, device);
      auto [at, added] = device_index.emplace(key, report.devices.size());
      if (added) {
        JobDevice added_device;
        added_device.key = key;
        added_device.uuid = device.uuid;
        added_device.node = node;
        added_device.nvml_index = device.nvml_index;
        added_device.device = device.device;
        added_device.name = device.name;
        added_device.total_bytes = device.total_bytes;
        report.devices.push_back(std::move(added_device));
        usages.emplace_back();
      } else if (report.devices[at->second].node != node) {
        report.warnings.push_back("device " + key + " appears on " +
                                  report.devices[at->second].node + " and on " + node +
                                  " (files of different jobs, or a host name reused?)");
      }
      if (device.peak_bytes > 0)
        usages[at->second].push_back({device.peak_bytes, run.start_unix_s, run.end_unix_s});
    }
    for (const RunDocRank& rank : run.ranks) {
      const RunDocDevice* device = report_rank_device(run, rank);
      report.ranks.push_back({rank.rank, rank.local_rank, node, file.path,
                              device != nullptr ? report_device_key(node, *device) : std::string(),
                              rank.device, device != nullptr ? device->name : std::string(),
                              rank.peak_bytes, rank.measured});
    }
  }
  report.mode = report_mode_of(modes);
  for (std::size_t index = 0; index < report.devices.size(); ++index)
    combine_usages(report.devices[index], usages[index]);

  std::stable_sort(
      report.ranks.begin(), report.ranks.end(), [](const JobRank& a, const JobRank& b) {
        return std::make_tuple(!a.rank, a.rank.value_or(0), a.node, a.local_rank.value_or(0)) <
               std::make_tuple(!b.rank, b.rank.value_or(0), b.node, b.local_rank.value_or(0));
      });
  for (std::size_t index = 1; index < report.ranks.size(); ++index) {
    const JobRank& previous = report.ranks[index - 1];
    const JobRank& rank = report.ranks[index];
    if (rank.rank && rank.rank == previous.rank && rank.file != previous.file) {
      report.warnings.push_back("rank " + std::to_string(*rank.rank) + " is in " + previous.file +
                                " and in " + rank.file + " (files of different jobs?)");
    }
  }
  for (std::size_t index = 0; index < report.ranks.size(); ++index) {
    const JobRank& rank = report.ranks[index];
    if (rank.device_key.empty()) continue;
    const auto device = device_index.find(rank.device_key);
    if (device == device_index.end()) continue;
    std::optional<std::size_t>& top = report.devices[device->second].top_rank;
    if (!top || report.ranks[*top].peak_bytes < rank.peak_bytes) top = index;
  }
  for (std::size_t index = 0; index < report.devices.size(); ++index) {
    const JobDevice& device = report.devices[index];
    if (device.peak_bytes > 0 &&
        (!report.maximum || report.devices[*report.maximum].peak_bytes < device.peak_bytes))
      report.maximum = index;
  }

  // Nodes in the order their first file was given; each input, rank and device counted on its
  // node through one index (linear in the files: a job of 10k nodes is 10k files).
  std::unordered_map<std::string, std::size_t> node_index;
  std::vector<std::vector<std::string>> node_modes;
  for (const JobInput& input : report.inputs) {
    auto [at, added] = node_index.emplace(input.node, report.nodes.size());
    if (added) {
      report.nodes.push_back({input.node, 0, 0, 0, {}, 0, std::nullopt});
      node_modes.emplace_back();
    }
    ++report.nodes[at->second].runs;
    node_modes[at->second].push_back(input.mode);
  }
  for (std::size_t index = 0; index < report.nodes.size(); ++index)
    report.nodes[index].mode = report_mode_of(node_modes[index]);
  for (const JobRank& rank : report.ranks) {
    if (const auto node = node_index.find(rank.node); node != node_index.end())
      ++report.nodes[node->second].ranks;
  }
  for (std::size_t index = 0; index < report.devices.size(); ++index) {
    const JobDevice& device = report.devices[index];
    const auto found = node_index.find(device.node);
    if (found == node_index.end() || device.peak_bytes == 0) continue;
    JobNode& node = report.nodes[found->second];
    ++node.devices_used;
    if (!node.peak_device || node.peak_bytes < device.peak_bytes) {
      node.peak_bytes = device.peak_bytes;
      node.peak_device = index;
    }
  }
  return report;
}

}  // namespace gpumem::run
