#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "format.hpp"
#include "gpumem/internal/run_timeline.hpp"
#include "svg_text.hpp"

namespace gpumem::cli {
namespace {

using run::footprint_steps;
using run::series_steps;
using run::Step;
using run::StepCoalescer;

constexpr double kWidth = 860;
constexpr double kPanelHeight = 320;
constexpr double kLeft = 80, kRight = 30, kTop = 56, kBottom = 48;

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

struct SeriesStyle {
  Series series;
  const char* label;
  const char* color;
  const char* width;
};

constexpr const char* kDeviceColor = "#9e9e9e";
constexpr const char* kTreeColor = "#1f77b4";
constexpr const char* kFootprintColor = "#d62728";
constexpr const char* kAllocationsColor = "#f4a6a6";

// A series as an SVG path of steps: each level holds until the next (a sampled value until the
// next sample, an exact level until the next event) and, after the last, to the end of the run.
// Steps closer than a pixel are coalesced to each pixel's lowest, highest and last level, so a
// spike is drawn at its full height however short it was.
template <class X, class Y>
std::string step_path(std::vector<Step> steps, double x_max_s, double duration_s, double plot_width,
                      X x, Y y) {
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.time_ns < b.time_ns; });
  const auto pixels = static_cast<std::size_t>(plot_width) + 2;
  StepCoalescer per_pixel(
      4 * pixels, std::max<std::int64_t>(1, static_cast<std::int64_t>(x_max_s * 1e9 / plot_width)));
  for (const Step& step : steps) per_pixel.add(step.time_ns, step.level);
  std::string path;
  for (const Step& step : per_pixel.steps()) {
    const std::string sx = svg_number(x(static_cast<double>(step.time_ns) / 1e9));
    const std::string sy = svg_number(y(static_cast<double>(step.level)));
    path += path.empty() ? "M" + sx + " " + sy : " H" + sx + " V" + sy;
  }
  if (!path.empty()) path += " H" + svg_number(x(duration_s));
  return path;
}

struct Area {
  double left, top, width, height;
};

struct Drawn {
  std::string name;  // the CSS class: series-<name>
  const char* color;
  const char* width;
  std::vector<Step> steps;
};

// One plotting area: the y grid and labels in `unit`, the x ticks, the frame, the series as steps,
// and the peak on the line it was measured on.
std::string draw_area(const Area& area, double y_max_bytes, double x_max, double duration,
                      const std::vector<Drawn>& series, std::int64_t peak, double peak_time) {
  const SvgAxisUnit unit = svg_axis_unit(y_max_bytes);
  const std::vector<double> y_ticks = nice_ticks(y_max_bytes / unit.bytes * 1.08, 5);
  const double y_max = y_ticks.back() * unit.bytes;
  std::vector<double> x_ticks = nice_ticks(duration, 8);
  if (x_ticks.size() > 2 && x_ticks.back() > duration) x_ticks.pop_back();
  auto x = [&](double t) { return area.left + t / x_max * area.width; };
  auto y = [&](double bytes) { return area.top + area.height - bytes / y_max * area.height; };
  std::string svg;
  for (double tick : y_ticks) {
    const double ty = y(tick * unit.bytes);
    svg += "<line x1=\"" + svg_number(area.left) + "\" x2=\"" + svg_number(area.left + area.width) +
           "\" y1=\"" + svg_number(ty) + "\" y2=\"" + svg_number(ty) + "\" stroke=\"#e6e6e6\"/>\n";
    svg += "<text x=\"" + svg_number(area.left - 6) + "\" y=\"" + svg_number(ty + 4) +
           "\" text-anchor=\"end\">" + tick_label(tick) + " " + unit.name + "</text>\n";
  }
  for (double tick : x_ticks) {
    const double tx = x(tick);
    svg += "<line x1=\"" + svg_number(tx) + "\" x2=\"" + svg_number(tx) + "\" y1=\"" +
           svg_number(area.top + area.height) + "\" y2=\"" +
           svg_number(area.top + area.height + 5) + "\" stroke=\"#444\"/>\n";
    svg += "<text x=\"" + svg_number(tx) + "\" y=\"" + svg_number(area.top + area.height + 19) +
           "\" text-anchor=\"middle\">" + tick_label(tick) + "</text>\n";
  }
  svg += "<text x=\"" + svg_number(area.left + area.width / 2) + "\" y=\"" +
         svg_number(area.top + area.height + 38) + "\" text-anchor=\"middle\">time (s)</text>\n";
  svg += "<rect x=\"" + svg_number(area.left) + "\" y=\"" + svg_number(area.top) + "\" width=\"" +
         svg_number(area.width) + "\" height=\"" + svg_number(area.height) +
         "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (const Drawn& drawn : series) {
    if (drawn.steps.empty()) continue;
    svg += "<path class=\"series-" + drawn.name + "\" fill=\"none\" stroke=\"" + drawn.color +
           "\" stroke-width=\"" + drawn.width + "\" stroke-linejoin=\"miter\" d=\"" +
           step_path(drawn.steps, x_max, duration, area.width, x, y) + "\"/>\n";
  }
  // The peak: a dashed level across the area, a dot where it happened, and its value.
  const double px = x(peak_time), py = y(double(peak));
  svg += "<g class=\"peak\" data-peak-bytes=\"" + std::to_string(peak) + "\">\n";
  svg += "<line x1=\"" + svg_number(area.left) + "\" x2=\"" + svg_number(area.left + area.width) +
         "\" y1=\"" + svg_number(py) + "\" y2=\"" + svg_number(py) +
         "\" stroke=\"#d62728\" stroke-dasharray=\"5,4\" stroke-width=\"1\"/>\n";
  svg += "<circle cx=\"" + svg_number(px) + "\" cy=\"" + svg_number(py) +
         "\" r=\"5\" fill=\"#d62728\" stroke=\"white\" stroke-width=\"1.5\"/>\n";
  const bool label_left = px > area.left + area.width * 0.7;
  svg += "<text x=\"" + svg_number(px + (label_left ? -9 : 9)) + "\" y=\"" + svg_number(py - 8) +
         "\" text-anchor=\"" + (label_left ? "end" : "start") +
         "\" font-weight=\"bold\" fill=\"#d62728\">peak " + svg_escape(format_bytes(peak)) +
         " at " + tick_label(std::round(peak_time * 1000) / 1000) + " s</text>\n";
  svg += "</g>\n";
  return svg;
}

// The legend, one entry per series drawn, from `left` along the line above an area.
std::string legend(double left, double baseline,
                   const std::vector<std::pair<std::string, const char*>>& entries) {
  std::string svg;
  for (const auto& [label, color] : entries) {
    svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + 18) + "\" y1=\"" +
           svg_number(baseline - 4) + "\" y2=\"" + svg_number(baseline - 4) + "\" stroke=\"" +
           color + "\" stroke-width=\"3\"/>\n";
    svg += "<text x=\"" + svg_number(left + 23) + "\" y=\"" + svg_number(baseline) + "\">" +
           svg_escape(label) + "</text>\n";
    left += 26 + 7.0 * static_cast<double>(label.size());
  }
  return svg;
}

}  // namespace

std::vector<double> nice_ticks(double max, int target) {
  if (!(max > 0)) max = 1;
  const double raw = max / std::max(target, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks = {0};
  while (ticks.back() < max * (1 - 1e-9)) ticks.push_back(static_cast<double>(ticks.size()) * step);
  return ticks;
}

std::string svg_plot(const RunResult& result, const std::vector<TimelineRow>& timeline) {
  // A panel per device the command used; one no process of the command touched would only show
  // other people's memory.
  std::vector<const DeviceTrack*> shown;
  for (const DeviceTrack& device : result.devices) {
    if (device_used(result, device)) shown.push_back(&device);
  }
  // Where others dwarf the command (the device's peak over four times the command's), a second
  // area draws the command alone, on its own scale.
  auto zoomed = [&](const DeviceTrack& device) {
    return double(device.device_peak) >
           4.0 * double(std::max<std::int64_t>(command_peak(result, device), 1));
  };
  double height = 0;
  for (const DeviceTrack* device : shown) height += kPanelHeight * (zoomed(*device) ? 2 : 1);
  if (shown.empty()) height = 120;
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(kWidth) +
         "\" height=\"" + svg_number(height) + "\" viewBox=\"0 0 " + svg_number(kWidth) + " " +
         svg_number(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const double duration = std::max(result.elapsed_s, 1e-3);
  std::vector<double> x_ticks = nice_ticks(duration, 8);
  if (x_ticks.size() > 2 && x_ticks.back() > duration) x_ticks.pop_back();
  const double x_max = std::max(duration, x_ticks.back());

  double panel_top = 0;
  for (const DeviceTrack* shown_device : shown) {
    const DeviceTrack& device = *shown_device;
    const int ordinal = device.info.device;
    const double top = panel_top + kTop;
    const double plot_width = kWidth - kLeft - kRight;
    const double plot_height = kPanelHeight - kTop - kBottom;
    const std::int64_t peak = command_peak(result, device);
    const double peak_time = command_peak_time(result, device);

    auto steps_of = [&](Series series) {
      std::vector<Step> steps;
      for (const TimelineRow& row : timeline) {
        if (row.device != ordinal || row.series != series) continue;
        steps.push_back({static_cast<std::int64_t>(std::llround(row.time_s * 1e9)), row.bytes});
      }
      return steps;
    };
    const std::vector<Step> exact = steps_of(Series::exact);
    const std::vector<Step> contexts = steps_of(Series::context);
    // The command's own lines: its processes as sampled; exactly, its footprint (the events with
    // the contexts: the figure the peak is of) and, fainter, its allocations alone.
    std::vector<Drawn> own;
    own.push_back({"tree", kTreeColor, "2", steps_of(Series::tree)});
    if (!exact.empty()) {
      own.push_back({"exact", kAllocationsColor, "1.5", exact});
      own.push_back({"footprint", kFootprintColor, "2", footprint_steps(exact, contexts)});
    }
    std::vector<Drawn> all{{"device", kDeviceColor, "1.5", steps_of(Series::device)}};
    all.insert(all.end(), own.begin(), own.end());
    std::vector<std::pair<std::string, const char*>> entries{
        {"device used (NVML)", kDeviceColor}, {"command's processes (sampled)", kTreeColor}};
    if (!exact.empty()) {
      entries.push_back({"footprint (exact + contexts)", kFootprintColor});
      entries.push_back({"allocations (exact)", kAllocationsColor});
    }

    svg += "<g class=\"device\" data-device=\"" + std::to_string(ordinal) + "\">\n";
    svg += "<text x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(top - 30) +
           "\" font-size=\"15\" font-weight=\"bold\">GPU " + std::to_string(ordinal) + " · " +
           svg_escape(device.info.name) + " — peak " + svg_escape(format_bytes(peak)) +
           " process footprint (" + to_string(result.measured) + ")</text>\n";
    svg += legend(kLeft, top - 6, entries);
    const double max_bytes = std::max<double>(
        {double(1 << 20), double(device.device_peak), double(device.tree_peak), double(peak)});
    svg += draw_area({kLeft, top, plot_width, plot_height}, max_bytes, x_max, duration, all, peak,
                     peak_time);
    panel_top += kPanelHeight;
    if (zoomed(device)) {
      const double zoom_top = panel_top + kTop;
      svg += "<g class=\"zoom\">\n<text x=\"" + svg_number(kLeft) + "\" y=\"" +
             svg_number(zoom_top - 12) +
             "\" font-weight=\"bold\">The command alone, on its own scale (others held up to " +
             svg_escape(format_bytes(device.device_peak)) + ")</text>\n";
      std::int64_t own_max = peak;
      for (const Drawn& drawn : own)
        for (const Step& step : drawn.steps) own_max = std::max(own_max, step.level);
      svg += draw_area({kLeft, zoom_top, plot_width, plot_height},
                       std::max<double>(double(1 << 20), double(own_max)), x_max, duration, own,
                       peak, peak_time);
      svg += "</g>\n";
      panel_top += kPanelHeight;
    }
    svg += "</g>\n";
  }
  if (shown.empty()) {
    svg += "<text x=\"" + svg_number(kWidth / 2) + "\" y=\"" + svg_number(height / 2) +
           "\" text-anchor=\"middle\">" +
           (result.devices.empty() ? "no GPU was measured" : "the command used no GPU") +
           "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpumem::cli
