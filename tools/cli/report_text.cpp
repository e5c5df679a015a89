#include <algorithm>

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

std::string report_text(const JobReport& report) {
  std::size_t used = 0;
  for (const JobDevice& device : report.devices) used += device.peak_bytes > 0 ? 1 : 0;
  std::string out = "gpumem report: " + plural(report.inputs.size(), "run", "runs") + " on " +
                    plural(report.nodes.size(), "node", "nodes") + ", " +
                    plural(report.ranks.size(), "rank", "ranks") + ", " +
                    plural(used, "GPU", "GPUs") + " used; mode " + mode_note(report) + "\n";
  if (report.maximum) {
    const JobDevice& device = report.devices[*report.maximum];
    out += "job maximum: " + format_bytes(device.peak_bytes) + " process footprint on " +
           printable(device.node) + ", " + device_label(device);
    if (device.top_rank) {
      const JobRank& rank = report.ranks[*device.top_rank];
      out += ", " + rank_label(rank.rank, rank.local_rank);
    }
    out += combined_note(device) + "\n";
  } else {
    out += "job maximum: no run used a measured GPU\n";
  }
  for (const std::string& warning : report.warnings) out += "warning: " + printable(warning) + "\n";
  std::size_t failed = 0;
  for (const JobInput& input : report.inputs) failed += input.exit_code != 0 ? 1 : 0;
  if (failed > 0)
    out += "note: " + plural(failed, "run", "runs") + " exited with a non-zero status\n";

  if (!report.ranks.empty()) {
    Table ranks({">RANK", ">LOCAL", "NODE", ">GPU", "NAME", ">PEAK", "MEASURED"});
    for (const JobRank& rank : report.ranks) {
      ranks.add_row({optional_number(rank.rank), optional_number(rank.local_rank),
                     printable(rank.node), optional_number(rank.device),
                     printable(rank.device_name), format_bytes(rank.peak_bytes),
                     printable(rank.measured)});
    }
    out += "\n" + ranks.render();
  }
  Table nodes({"NODE", ">RUNS", ">RANKS", ">GPUS USED", ">PEAK", "ON", "MODE"});
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
    nodes.add_row({printable(node.name), std::to_string(node.runs), std::to_string(node.ranks),
                   std::to_string(node.devices_used), format_bytes(node.peak_bytes), on,
                   printable(node.mode)});
  }
  out += "\n" + nodes.render();
  Table devices({"DEVICE", "NODE", ">GPU", "NAME", ">PEAK", ">TOTAL", "TOP RANK"});
  for (const JobDevice& device : report.devices) {
    std::string top = "-";
    if (device.top_rank) {
      const JobRank& rank = report.ranks[*device.top_rank];
      top = rank.rank ? std::to_string(*rank.rank) : "local " + optional_number(rank.local_rank);
    }
    devices.add_row({printable(device.key), printable(device.node), std::to_string(device.device),
                     printable(device.name),
                     format_bytes(device.peak_bytes) + combined_mark(device),
                     format_bytes(device.total_bytes), top});
  }
  out += "\n" + devices.render();
  return out;
}

}  // namespace gpumem::cli
