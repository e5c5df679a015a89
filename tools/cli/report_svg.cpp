// One self-contained SVG: a bar per rank (per node for very many ranks, per device when no run
// had ranks), coloured by node, the job's maximum in red and marked by a dashed line.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "format.hpp"
#include "report_output.hpp"
#include "svg_plot.hpp"
#include "svg_text.hpp"

namespace gpumem::cli {
namespace {

constexpr double kWidth = 860;
constexpr double kLeft = 260, kRight = 110, kTop = 64, kBottom = 48, kBar = 22, kGap = 8;
constexpr const char* kMaximumColour = "#d62728";
constexpr const char* kNodeColours[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b",
                                        "#17becf", "#bcbd22", "#7f7f7f", "#e377c2"};

struct Bar {
  std::string label;
  std::string node;
  std::int64_t bytes = 0;
  bool maximum = false;
};

// Beyond this many ranks a bar each would make a chart nobody can read: one bar per node.
constexpr std::size_t kMaxRankBars = 128;

enum class Per { rank, node, device };

Per per(const JobReport& report) {
  if (report.ranks.empty()) return Per::device;
  return report.ranks.size() <= kMaxRankBars ? Per::rank : Per::node;
}

std::vector<Bar> bars_of(const JobReport& report) {
  std::vector<Bar> bars;
  const JobDevice* top = report.maximum ? &report.devices[*report.maximum] : nullptr;
  if (per(report) == Per::node) {
    for (const JobNode& node : report.nodes) {
      std::string label = node.name;
      const JobDevice* device = node.peak_device ? &report.devices[*node.peak_device] : nullptr;
      if (device != nullptr) {
        label += " · GPU " + std::to_string(device->device);
        if (device->top_rank) {
          const JobRank& rank = report.ranks[*device->top_rank];
          if (rank.rank) label += ", rank " + std::to_string(*rank.rank);
        }
      }
      bars.push_back({label, node.name, node.peak_bytes, device != nullptr && device == top});
    }
    return bars;
  }
  if (per(report) == Per::rank) {
    for (std::size_t index = 0; index < report.ranks.size(); ++index) {
      const JobRank& rank = report.ranks[index];
      std::string label = rank_label(rank.rank, rank.local_rank) + " · " + rank.node;
      if (rank.device) label += " · GPU " + std::to_string(*rank.device);
      bars.push_back({label, rank.node, rank.peak_bytes,
                      top != nullptr && top->top_rank && *top->top_rank == index});
    }
    return bars;
  }
  for (const JobDevice& device : report.devices) {
    bars.push_back(
        {device.node + " · GPU " + std::to_string(device.device) + " (" + device.name + ")",
         device.node, device.peak_bytes, &device == top});
  }
  return bars;
}

}  // namespace

std::string report_svg(const JobReport& report) {
  const std::vector<Bar> bars = bars_of(report);
  std::unordered_map<std::string, std::size_t> nodes;  // each node's place, for its colour
  for (const JobNode& node : report.nodes) nodes.emplace(node.name, nodes.size());
  const std::int64_t maximum = report.maximum ? report.devices[*report.maximum].peak_bytes : 0;
  std::int64_t highest = maximum;
  for (const Bar& bar : bars) highest = std::max(highest, bar.bytes);
  const SvgAxisUnit unit = svg_axis_unit(static_cast<double>(highest));
  const std::vector<double> ticks = nice_ticks(static_cast<double>(highest) / unit.bytes, 6);
  const double axis_max = ticks.empty() ? 1 : std::max(ticks.back(), 1e-9);
  const double plot_width = kWidth - kLeft - kRight;
  const double height =
      kTop + kBottom + static_cast<double>(std::max<std::size_t>(bars.size(), 1)) * (kBar + kGap);
  auto x_of = [&](double bytes) { return kLeft + plot_width * (bytes / unit.bytes) / axis_max; };

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(kWidth) +
                    "\" height=\"" + svg_number(height) + "\" viewBox=\"0 0 " + svg_number(kWidth) +
                    " " + svg_number(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
         svg_escape(std::string("GPU memory peak per ") +
                    (per(report) == Per::rank   ? "rank"
                     : per(report) == Per::node ? "node"
                                                : "device") +
                    " (process footprint), mode " + report.mode +
                    (per(report) == Per::node
                         ? ", " + std::to_string(report.ranks.size()) + " ranks: a bar per node"
                         : std::string())) +
         "</text>\n";
  std::string subtitle = "job maximum ";
  if (report.maximum) {
    const JobDevice& device = report.devices[*report.maximum];
    subtitle += format_bytes(device.peak_bytes) + " on " + device.node + ", GPU " +
                std::to_string(device.device);
    if (device.top_rank) {
      const JobRank& rank = report.ranks[*device.top_rank];
      subtitle += ", " + rank_label(rank.rank, rank.local_rank);
    }
  } else {
    subtitle += "none: no run used a measured GPU";
  }
  out += "<text x=\"12\" y=\"42\" fill=\"" + std::string(kMaximumColour) + "\">" +
         svg_escape(subtitle) + "</text>\n";
  const double bottom = height - kBottom;
  for (double tick : ticks) {
    const double x = x_of(tick * unit.bytes);
    out += "<line x1=\"" + svg_number(x) + "\" y1=\"" + svg_number(kTop - 4) + "\" x2=\"" +
           svg_number(x) + "\" y2=\"" + svg_number(bottom) + "\" stroke=\"#e0e0e0\"/>\n";
    char label[48];
    std::snprintf(label, sizeof label, "%g %s", tick, unit.name);
    out += "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(bottom + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">" + svg_escape(label) + "</text>\n";
  }
  for (std::size_t index = 0; index < bars.size(); ++index) {
    const Bar& bar = bars[index];
    const double y = kTop + static_cast<double>(index) * (kBar + kGap);
    const auto node = nodes.find(bar.node);
    const std::size_t colour = (node == nodes.end() ? nodes.size() : node->second) %
                               (sizeof kNodeColours / sizeof kNodeColours[0]);
    const std::string fill = bar.maximum ? kMaximumColour : kNodeColours[colour];
    out += "<text x=\"" + svg_number(kLeft - 8) + "\" y=\"" + svg_number(y + kBar * 0.7) +
           "\" text-anchor=\"end\">" + svg_escape(bar.label) + "</text>\n";
    out += "<rect x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(y) + "\" width=\"" +
           svg_number(std::max(0.0, x_of(static_cast<double>(bar.bytes)) - kLeft)) +
           "\" height=\"" + svg_number(kBar) + "\" fill=\"" + fill + "\"/>\n";
    out += "<text x=\"" + svg_number(x_of(static_cast<double>(bar.bytes)) + 6) + "\" y=\"" +
           svg_number(y + kBar * 0.7) + "\">" + svg_escape(format_bytes(bar.bytes)) + "</text>\n";
  }
  if (maximum > 0) {
    const double x = x_of(static_cast<double>(maximum));
    out += "<line x1=\"" + svg_number(x) + "\" y1=\"" + svg_number(kTop - 8) + "\" x2=\"" +
           svg_number(x) + "\" y2=\"" + svg_number(bottom) + "\" stroke=\"" + kMaximumColour +
           "\" stroke-dasharray=\"5,4\"/>\n";
  }
  out += "<line x1=\"" + svg_number(kLeft) + "\" y1=\"" + svg_number(bottom) + "\" x2=\"" +
         svg_number(kWidth - kRight) + "\" y2=\"" + svg_number(bottom) + "\" stroke=\"#333\"/>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace gpumem::cli
