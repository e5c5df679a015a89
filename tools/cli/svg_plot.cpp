#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "format.hpp"
#include "step_coalescer.hpp"
#include "svg_text.hpp"

namespace gpumem::cli {
namespace {

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

constexpr SeriesStyle kStyles[] = {
    {Series::device, "device used (NVML)", "#9e9e9e", "1.5"},
    {Series::tree, "command's processes (sampled)", "#1f77b4", "2"},
    {Series::exact, "command's allocations (exact)", "#d62728", "2"},
};

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
  // Idle devices would only add empty panels: show those the command or anyone else used.
  std::vector<const DeviceTrack*> shown;
  for (const DeviceTrack& device : result.devices) {
    if (device.exact_peak > 0 || device.tree_peak > 0 || device.device_peak > 0) {
      shown.push_back(&device);
    }
  }
  if (shown.empty()) {
    for (const DeviceTrack& device : result.devices) shown.push_back(&device);
  }
  const std::size_t panels = std::max<std::size_t>(shown.size(), 1);
  const double height = kPanelHeight * static_cast<double>(panels);
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(kWidth) +
         "\" height=\"" + svg_number(height) + "\" viewBox=\"0 0 " + svg_number(kWidth) + " " +
         svg_number(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const double duration = std::max(result.elapsed_s, 1e-3);

  for (std::size_t panel = 0; panel < shown.size(); ++panel) {
    const DeviceTrack& device = *shown[panel];
    const int ordinal = device.info.ordinal;
    const double top = kPanelHeight * static_cast<double>(panel) + kTop;
    const double plot_width = kWidth - kLeft - kRight;
    const double plot_height = kPanelHeight - kTop - kBottom;
    const std::int64_t peak = command_peak(result, device);
    const double peak_time = command_peak_time(result, device);

    const double max_bytes = std::max<double>(
        {double(1 << 20), double(device.device_peak), double(device.tree_peak), double(peak)});
    const SvgAxisUnit unit = svg_axis_unit(max_bytes);
    const std::vector<double> y_ticks = nice_ticks(max_bytes / unit.bytes * 1.08, 5);
    const double y_max = y_ticks.back() * unit.bytes;
    std::vector<double> x_ticks = nice_ticks(duration, 8);
    if (x_ticks.size() > 2 && x_ticks.back() > duration) x_ticks.pop_back();
    const double x_max = std::max(duration, x_ticks.back());
    auto x = [&](double t) { return kLeft + t / x_max * plot_width; };
    auto y = [&](double bytes) { return top + plot_height - bytes / y_max * plot_height; };

    svg += "<g class=\"device\" data-device=\"" + std::to_string(ordinal) + "\">\n";
    svg += "<text x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(top - 30) +
           "\" font-size=\"15\" font-weight=\"bold\">GPU " + std::to_string(ordinal) + " · " +
           svg_escape(device.info.name) + " — peak " + svg_escape(format_bytes(peak)) + " (" +
           to_string(result.measured) + ")</text>\n";
    for (double tick : y_ticks) {
      const double ty = y(tick * unit.bytes);
      svg += "<line x1=\"" + svg_number(kLeft) + "\" x2=\"" + svg_number(kLeft + plot_width) +
             "\" y1=\"" + svg_number(ty) + "\" y2=\"" + svg_number(ty) +
             "\" stroke=\"#e6e6e6\"/>\n";
      svg += "<text x=\"" + svg_number(kLeft - 6) + "\" y=\"" + svg_number(ty + 4) +
             "\" text-anchor=\"end\">" + tick_label(tick) + " " + unit.name + "</text>\n";
    }
    for (double tick : x_ticks) {
      const double tx = x(tick);
      svg += "<line x1=\"" + svg_number(tx) + "\" x2=\"" + svg_number(tx) + "\" y1=\"" +
             svg_number(top + plot_height) + "\" y2=\"" + svg_number(top + plot_height + 5) +
             "\" stroke=\"#444\"/>\n";
      svg += "<text x=\"" + svg_number(tx) + "\" y=\"" + svg_number(top + plot_height + 19) +
             "\" text-anchor=\"middle\">" + tick_label(tick) + "</text>\n";
    }
    svg += "<text x=\"" + svg_number(kLeft + plot_width / 2) + "\" y=\"" +
           svg_number(top + plot_height + 38) + "\" text-anchor=\"middle\">time (s)</text>\n";
    svg += "<rect x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(top) + "\" width=\"" +
           svg_number(plot_width) + "\" height=\"" + svg_number(plot_height) +
           "\" fill=\"none\" stroke=\"#444\"/>\n";

    double legend_x = kLeft;
    for (const SeriesStyle& style : kStyles) {
      std::vector<Step> steps;
      for (const TimelineRow& row : timeline) {
        if (row.device != ordinal || row.series != style.series) continue;
        steps.push_back({static_cast<std::int64_t>(std::llround(row.time_s * 1e9)), row.bytes});
      }
      if (steps.empty()) continue;
      svg += "<path class=\"series-" + std::string(to_string(style.series)) +
             "\" fill=\"none\" stroke=\"" + style.color + "\" stroke-width=\"" + style.width +
             "\" stroke-linejoin=\"miter\" d=\"" +
             step_path(std::move(steps), x_max, duration, plot_width, x, y) + "\"/>\n";
      svg += "<line x1=\"" + svg_number(legend_x) + "\" x2=\"" + svg_number(legend_x + 18) +
             "\" y1=\"" + svg_number(top - 10) + "\" y2=\"" + svg_number(top - 10) +
             "\" stroke=\"" + style.color + "\" stroke-width=\"3\"/>\n";
      svg += "<text x=\"" + svg_number(legend_x + 23) + "\" y=\"" + svg_number(top - 6) + "\">" +
             style.label + "</text>\n";
      legend_x += 40 + 6.5 * static_cast<double>(std::string(style.label).size());
    }

    // The peak: a dashed level across the panel, a dot where it happened, and its value.
    const double px = x(peak_time), py = y(double(peak));
    svg += "<g class=\"peak\" data-peak-bytes=\"" + std::to_string(peak) + "\">\n";
    svg += "<line x1=\"" + svg_number(kLeft) + "\" x2=\"" + svg_number(kLeft + plot_width) +
           "\" y1=\"" + svg_number(py) + "\" y2=\"" + svg_number(py) +
           "\" stroke=\"#d62728\" stroke-dasharray=\"5,4\" stroke-width=\"1\"/>\n";
    svg += "<circle cx=\"" + svg_number(px) + "\" cy=\"" + svg_number(py) +
           "\" r=\"5\" fill=\"#d62728\" stroke=\"white\" stroke-width=\"1.5\"/>\n";
    const bool label_left = px > kLeft + plot_width * 0.7;
    svg += "<text x=\"" + svg_number(px + (label_left ? -9 : 9)) + "\" y=\"" + svg_number(py - 8) +
           "\" text-anchor=\"" + (label_left ? "end" : "start") +
           "\" font-weight=\"bold\" fill=\"#d62728\">peak " + svg_escape(format_bytes(peak)) +
           " at " + tick_label(std::round(peak_time * 1000) / 1000) + " s</text>\n";
    svg += "</g>\n</g>\n";
  }
  if (result.devices.empty()) {
    svg += "<text x=\"" + svg_number(kWidth / 2) + "\" y=\"" + svg_number(height / 2) +
           "\" text-anchor=\"middle\">no GPU was measured</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpumem::cli
