#include <algorithm>

#include "fitted_table.hpp"
#include "format.hpp"
#include "report_output.hpp"
#include "table.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string optional_number(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "-";
}

// Every name below comes from a run file, anyone's input: shown through printable(), so an
// escape sequence or a line break in a host name cannot drive the terminal or forge a line.
std::string device_label(const JobDevice& device) {
  return "GPU " + std::to_string(device.device) + " (" +
         (device.name.empty() ? std::string("?") : printable(device.name)) + ")";
}

std::string mode_note(const JobReport& report) {
  const auto count = [&](const char* mode) {
    return std::count_if(report.inputs.begin(), report.inputs.end(),
                         [&](const JobInput& input) { return input.mode == mode; });
  };
  if (report.mode == "exact") return "exact (every run measured exactly)";
  if (report.mode == "sampled") return "sampled (no run measured exactly)";
  return "mixed (" + std::to_string(count("exact")) + " exact, " + std::to_string(count("mixed")) +
         " mixed, " + std::to_string(count("sampled")) + " sampled)";
}

// How a device's figure was made from several runs, for the job maximum's line.
std::string combined_note(const JobDevice& device) {
  const std::string runs = std::to_string(device.runs_using);
  switch (device.combined) {
    case JobDevice::Combined::one:
      return "";
    case JobDevice::Combined::highest:
      return " (the highest of " + runs + " runs that did not overlap)";
    case JobDevice::Combined::sum:
      return (device.runs_summed == device.runs_using
                  ? " (the sum of " + runs + " overlapping runs' peaks"
                  : " (the sum of the peaks of " + std::to_string(device.runs_summed) + " of " +
                        runs + " runs that overlapped") +
             ": an upper bound, their peaks need not have coincided)";
    case JobDevice::Combined::overlap_unknown:
      return " (the sum of " + runs +
             " runs' peaks on it: whether they overlapped is unknown, a run file has no times)";
  }
  return "";
}

std::string combined_mark(const JobDevice& device) {
  switch (device.combined) {
    case JobDevice::Combined::one:
      return "";
    case JobDevice::Combined::highest:
      return " (highest)";
    case JobDevice::Combined::sum:
    case JobDevice::Combined::overlap_unknown:
      return " (sum)";
  }
  return "";
}

}  // namespace

std::string report_text(const JobReport& report, const ReportStyle& style) {
  const std::string ellipsis = style.unicode ? "…" : "~";
  // Lines of facts wrap at the width, never cut; tables shorten, then drop, columns.
  auto fact = [&](const std::string& line) {
    return style.width ? wrap_line(line, *style.width, "  ") : line + "\n";
  };
  std::size_t used = 0;
  for (const JobDevice& device : report.devices) used += device.peak_bytes > 0 ? 1 : 0;
  std::string out = fact("gpumem report: " + plural(report.inputs.size(), "run", "runs") + " on " +
                         plural(report.nodes.size(), "node", "nodes") + ", " +
                         plural(report.ranks.size(), "rank", "ranks") + ", " +
                         plural(used, "GPU", "GPUs") + " used; mode " + mode_note(report));
  if (report.maximum) {
    const JobDevice& device = report.devices[*report.maximum];
    std::string line = "job maximum: " + format_bytes(device.peak_bytes) +
                       " process footprint on " + printable(device.node) + ", " +
                       device_label(device);
    if (device.top_rank) {
      const JobRank& rank = report.ranks[*device.top_rank];
      line += ", " + rank_label(rank.rank, rank.local_rank);
    }
    out += fact(line + combined_note(device));
  } else {
    out += fact("job maximum: no run used a measured GPU");
  }
  for (const std::string& warning : report.warnings) out += fact("warning: " + printable(warning));
  std::size_t failed = 0;
  for (const JobInput& input : report.inputs) failed += input.exit_code != 0 ? 1 : 0;
  if (failed > 0)
    out += fact("note: " + plural(failed, "run", "runs") + " exited with a non-zero status");

  if (!report.ranks.empty()) {
    enum : std::size_t { kRank, kLocal, kNode, kGpu, kName, kPeak, kMeasured };
    FitLayout ranks{{{">RANK"},
                     {">LOCAL"},
                     {"NODE", {}, {}, 8},
                     {">GPU"},
                     {"NAME", {}, {}, 8},
                     {">PEAK"},
                     {"MEASURED"}},
                    {{FitStep::shorten, kName}, {FitStep::drop, kName}}};
    for (const JobRank& rank : report.ranks) {
      ranks.columns[kRank].cells.push_back(optional_number(rank.rank));
      ranks.columns[kLocal].cells.push_back(optional_number(rank.local_rank));
      ranks.columns[kNode].cells.push_back(printable(rank.node));
      ranks.columns[kGpu].cells.push_back(optional_number(rank.device));
      ranks.columns[kName].cells.push_back(printable(rank.device_name));
      ranks.columns[kName].short_cells.push_back(printable(without_vendor(rank.device_name)));
      ranks.columns[kPeak].cells.push_back(format_bytes(rank.peak_bytes));
      ranks.columns[kMeasured].cells.push_back(printable(rank.measured));
    }
    out += "\n" + fit_table(ranks, style.width, ellipsis);
  }
  enum : std::size_t { kNodeName, kRuns, kRanks, kUsed, kNodePeak, kOn, kMode };
  FitLayout nodes{{{"NODE", {}, {}, 8},
                   {">RUNS"},
                   {">RANKS"},
                   {">GPUS USED"},
                   {">PEAK"},
                   {"ON"},
                   {"MODE", {}, {}, 5}},
                  {}};
  for (const JobNode& node : report.nodes) {
    std::string on = "-";
    if (node.peak_device) {
      const JobDevice& device = report.devices[*node.peak_device];
      on = "GPU " + std::to_string(device.device);
      if (device.top_rank) {
        const JobRank& rank = report.ranks[*device.top_rank];
        if (rank.rank) on += ", rank " + std::to_string(*rank.rank);
      }
    }
    nodes.columns[kNodeName].cells.push_back(printable(node.name));
    nodes.columns[kRuns].cells.push_back(std::to_string(node.runs));
    nodes.columns[kRanks].cells.push_back(std::to_string(node.ranks));
    nodes.columns[kUsed].cells.push_back(std::to_string(node.devices_used));
    nodes.columns[kNodePeak].cells.push_back(format_bytes(node.peak_bytes));
    nodes.columns[kOn].cells.push_back(on);
    nodes.columns[kMode].cells.push_back(printable(node.mode));
  }
  out += "\n" + fit_table(nodes, style.width, ellipsis);
  // Devices by UUID: cut to the shortest prefix that still tells them apart, then the name
  // without "NVIDIA ", then TOTAL and NAME go; the peak and where it was stay.
  enum : std::size_t { kDevice, kDeviceNode, kDeviceGpu, kDeviceName, kDevicePeak, kTotal, kTop };
  std::vector<std::string> keys;
  for (const JobDevice& device : report.devices) keys.push_back(printable(device.key));
  FitLayout devices{{{"DEVICE", {}, unique_prefixes(keys, 12), 12},
                     {"NODE", {}, {}, 8},
                     {">GPU"},
                     {"NAME", {}, {}, 8},
                     {">PEAK"},
                     {">TOTAL"},
                     {"TOP RANK"}},
                    {{FitStep::shorten, kDevice},
                     {FitStep::shorten, kDeviceName},
                     {FitStep::drop, kTotal},
                     {FitStep::drop, kDeviceName}}};
  for (const JobDevice& device : report.devices) {
    std::string top = "-";
    if (device.top_rank) {
      const JobRank& rank = report.ranks[*device.top_rank];
      top = rank.rank ? std::to_string(*rank.rank) : "local " + optional_number(rank.local_rank);
    }
    devices.columns[kDevice].cells.push_back(printable(device.key));
    devices.columns[kDeviceNode].cells.push_back(printable(device.node));
    devices.columns[kDeviceGpu].cells.push_back(std::to_string(device.device));
    devices.columns[kDeviceName].cells.push_back(printable(device.name));
    devices.columns[kDeviceName].short_cells.push_back(printable(without_vendor(device.name)));
    devices.columns[kDevicePeak].cells.push_back(format_bytes(device.peak_bytes) +
                                                 combined_mark(device));
    devices.columns[kTotal].cells.push_back(format_bytes(device.total_bytes));
    devices.columns[kTop].cells.push_back(top);
  }
  out += "\n" + fit_table(devices, style.width, ellipsis);
  return out;
}

}  // namespace gpumem::cli
