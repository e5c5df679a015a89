// What `gpumem diff` writes: the tables fitted to the terminal, the JSON (gpumem.diff/1) and an
// SVG of the before and after bars.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "diff/diff.hpp"
#include "fitted_table.hpp"
#include "format.hpp"
#include "json_null.hpp"
#include "svg_plot.hpp"
#include "svg_text.hpp"
#include "text_width.hpp"

namespace gpumem::cli::diff {
namespace {

std::string signed_bytes(std::int64_t delta) {
  if (delta == 0) return "0 B";
  return (delta > 0 ? "+" : "-") + format_bytes(delta > 0 ? delta : -delta);
}

std::string side_bytes(const std::optional<std::int64_t>& bytes) {
  return bytes ? format_bytes(*bytes) : "-";
}

// "+50.0%", "new" (in `after` only), "gone" (in `before` only), "-" (from nothing).
std::string percent_text(const Change& change) {
  if (!change.before) return "new";
  if (!change.after) return "gone";
  if (change.delta() == 0) return "0.0%";
  const std::optional<double> percent = change.percent();
  if (!percent) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", *percent);
  return text;
}

// A table of changes: NAME, BEFORE, AFTER, CHANGE, %, and the extra columns given.
struct ChangeRows {
  std::vector<std::string> names;
  std::vector<Change> changes;
  std::vector<std::vector<std::string>> extras;  // per extra column, per row
};

std::string change_table(const std::string& title, const ChangeRows& rows,
                         const std::vector<std::string>& extra_headers,
                         const TextOptions& options) {
  enum : std::size_t { kName, kBefore, kAfter, kChange, kPercent, kExtra };
  FitLayout layout{{{title, {}, {}, 16}, {">BEFORE"}, {">AFTER"}, {">CHANGE"}, {">%"}}, {}};
  for (const std::string& header : extra_headers) layout.columns.push_back({header, {}, {}, 12});
  // The extra columns (callers, how a device was matched) go first, last added first.
  for (std::size_t at = extra_headers.size(); at-- > 0;)
    layout.steps.push_back({FitStep::drop, kExtra + at});
  layout.steps.push_back({FitStep::drop, kBefore});
  layout.steps.push_back({FitStep::drop, kAfter});
  for (std::size_t row = 0; row < rows.names.size(); ++row) {
    const Change& change = rows.changes[row];
    layout.columns[kName].cells.push_back(printable(rows.names[row]));
    layout.columns[kBefore].cells.push_back(side_bytes(change.before));
    layout.columns[kAfter].cells.push_back(side_bytes(change.after));
    layout.columns[kChange].cells.push_back(signed_bytes(change.delta()));
    layout.columns[kPercent].cells.push_back(percent_text(change));
    for (std::size_t at = 0; at < extra_headers.size(); ++at)
      layout.columns[kExtra + at].cells.push_back(printable(rows.extras[at][row]));
  }
  return fit_table(layout, options.width, options.unicode ? "…" : "~");
}

std::string line(const std::string& text, const TextOptions& options) {
  return options.width ? wrap_line(printable(text), *options.width, "  ") : printable(text) + "\n";
}

using Json = nlohmann::ordered_json;

Json change_json(const Change& change) {
  const std::optional<double> percent = change.percent();
  return {{"before_bytes", json_or_null(change.before)},
          {"after_bytes", json_or_null(change.after)},
          {"delta_bytes", change.delta()},
          {"percent", percent ? Json(std::round(*percent * 100) / 100) : Json()},
          {"change", change_word(change)}};
}

void merge(Json& into, const Json& from) {
  for (const auto& [key, value] : from.items()) into[key] = value;
}

}  // namespace

std::string diff_text(const Diff& diff, const TextOptions& options) {
  std::string out = line(diff.before_path + (options.unicode ? " → " : " -> ") + diff.after_path +
                             " (" + diff.schema + ")",
                         options);
  out += "\n";
  if (diff.devices.empty()) {
    out += "Neither input has a device's peak.\n";
  } else {
    ChangeRows rows;
    rows.extras.resize(1);
    for (const DeviceChange& device : diff.devices) {
      rows.names.push_back(device.label);
      rows.changes.push_back(device.peak);
      rows.extras[0].push_back(device.matched_by.empty() ? "-" : "by " + device.matched_by);
    }
    out += change_table("PEAK PER DEVICE", rows, {"MATCHED"}, options);
  }
  if (!diff.ranks.empty()) {
    ChangeRows rows;
    for (const RankChange& rank : diff.ranks) {
      rows.names.push_back(rank.label);
      rows.changes.push_back(rank.peak);
    }
    out += "\n" + change_table("PEAK PER RANK", rows, {}, options);
  }
  if (diff.has_stacks) {
    ChangeRows rows;
    rows.extras.resize(1);
    std::size_t unchanged = 0;
    for (const StackChange& stack : diff.stacks) {
      if (change_word(stack.bytes) == "unchanged") {
        ++unchanged;
        continue;
      }
      rows.names.push_back(stack.allocated_by);
      rows.changes.push_back(stack.bytes);
      rows.extras[0].push_back(stack.called_from);
    }
    out += "\n";
    if (rows.names.empty()) {
      out += "No allocating stack changed at the peak.\n";
    } else {
      out += change_table("STACK AT THE PEAK", rows, {"CALLED FROM"}, options);
    }
    if (unchanged > 0)
      out += line(std::to_string(unchanged) + (unchanged == 1 ? " stack" : " stacks") +
                      " held the same at both peaks.",
                  options);
  }
  if (!diff.notes.empty()) out += "\n";
  for (const std::string& note : diff.notes) out += line("note: " + note, options);
  return out;
}

std::string diff_json(const Diff& diff, const std::optional<Threshold>& threshold) {
  Json devices = Json::array();
  for (const DeviceChange& device : diff.devices) {
    Json entry = {{"device", device.ordinal},
                  {"name", device.name},
                  {"node", device.node.empty() ? Json() : Json(device.node)},
                  {"uuid", device.uuid.empty() ? Json() : Json(device.uuid)},
                  {"matched_by", device.matched_by.empty() ? Json() : Json(device.matched_by)}};
    merge(entry, change_json(device.peak));
    devices.push_back(std::move(entry));
  }
  Json ranks = Json::array();
  for (const RankChange& rank : diff.ranks) {
    Json entry = {{"rank", json_or_null(rank.rank)},
                  {"local_rank", json_or_null(rank.local_rank)},
                  {"node", rank.node.empty() ? Json() : Json(rank.node)}};
    merge(entry, change_json(rank.peak));
    ranks.push_back(std::move(entry));
  }
  Json stacks;
  if (diff.has_stacks) {
    stacks = Json::array();
    for (const StackChange& stack : diff.stacks) {
      Json entry = {{"allocated_by", stack.allocated_by},
                    {"called_from", stack.called_from},
                    {"before_blocks", stack.blocks_before},
                    {"after_blocks", stack.blocks_after}};
      merge(entry, change_json(stack.bytes));
      stacks.push_back(std::move(entry));
    }
  }
  Json verdict;
  if (threshold) {
    Json over = Json::array();
    for (const DeviceChange* device : over_threshold(diff, *threshold))
      over.push_back(device->label);
    verdict = {{"threshold", threshold->text},
               {"percent", threshold->percent ? Json(*threshold->percent) : Json()},
               {"bytes", threshold->bytes ? Json(*threshold->bytes) : Json()},
               {"exceeded", !over.empty()},
               {"devices", over}};
  }
  const Json document = {
      {"schema", "gpumem.diff/1"}, {"inputs", diff.schema}, {"before", diff.before_path},
      {"after", diff.after_path},  {"devices", devices},    {"ranks", ranks},
      {"stacks", stacks},          {"fail_above", verdict}, {"notes", diff.notes}};
  // File names may hold bytes that are not UTF-8: U+FFFD in the JSON, never a crash.
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

constexpr double kSvgWidth = 900;
constexpr double kSvgLeft = 320, kSvgRight = 150, kSvgBar = 11, kSvgRowGap = 10, kSvgTitle = 28;
constexpr const char* kBeforeColour = "#9e9e9e";
constexpr const char* kGrewColour = "#d62728";
constexpr const char* kShrankColour = "#2ca02c";
constexpr const char* kSameColour = "#1f77b4";
// Beyond this many stacks a chart is no longer read: the largest changes only.
constexpr std::size_t kMaxStackBars = 20;

struct SvgRow {
  std::string label;
  Change change;
};

}  // namespace

std::string diff_svg(const Diff& diff) {
  std::vector<std::pair<std::string, std::vector<SvgRow>>> sections;
  std::vector<SvgRow> devices;
  for (const DeviceChange& device : diff.devices) devices.push_back({device.label, device.peak});
  sections.emplace_back("Peak per device", std::move(devices));
  if (diff.has_stacks) {
    std::vector<SvgRow> stacks;
    for (const StackChange& stack : diff.stacks)
      if (stack.bytes.delta() != 0) stacks.push_back({stack.allocated_by, stack.bytes});
    std::stable_sort(stacks.begin(), stacks.end(), [](const SvgRow& a, const SvgRow& b) {
      return std::abs(a.change.delta()) > std::abs(b.change.delta());
    });
    if (stacks.size() > kMaxStackBars) stacks.resize(kMaxStackBars);
    sections.emplace_back("Allocating stacks that changed at the peak", std::move(stacks));
  }
  std::int64_t highest = 0;
  double height = 70;
  for (const auto& [title, rows] : sections) {
    height += kSvgTitle + static_cast<double>(std::max<std::size_t>(rows.size(), 1)) *
                              (2 * kSvgBar + kSvgRowGap);
    for (const SvgRow& row : rows)
      highest = std::max({highest, row.change.before.value_or(0), row.change.after.value_or(0)});
  }
  const SvgAxisUnit unit = svg_axis_unit(static_cast<double>(highest));
  const std::vector<double> ticks = nice_ticks(static_cast<double>(highest) / unit.bytes, 6);
  const double axis_max = ticks.empty() ? 1 : std::max(ticks.back(), 1e-9);
  const double plot_width = kSvgWidth - kSvgLeft - kSvgRight;
  auto width_of = [&](std::int64_t bytes) {
    return plot_width * (static_cast<double>(bytes) / unit.bytes) / axis_max;
  };
  // The axis under the last row, its labels below it.
  const double bottom = height + 6;
  height = bottom + 30;

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(kSvgWidth) +
                    "\" height=\"" + svg_number(height) + "\" viewBox=\"0 0 " +
                    svg_number(kSvgWidth) + " " + svg_number(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
         svg_escape("GPU memory: " + diff.before_path + " → " + diff.after_path) + "</text>\n";
  out += "<text x=\"12\" y=\"42\"><tspan fill=\"" + std::string(kBeforeColour) +
         "\">■ before</tspan>  <tspan fill=\"" + kGrewColour + "\">■ after, grew</tspan>  " +
         "<tspan fill=\"" + kShrankColour + "\">■ after, shrank</tspan>  <tspan fill=\"" +
         kSameColour + "\">■ after, the same</tspan></text>\n";
  for (double tick : ticks) {
    const double x = kSvgLeft + width_of(static_cast<std::int64_t>(tick * unit.bytes));
    out += "<line x1=\"" + svg_number(x) + "\" y1=\"56\" x2=\"" + svg_number(x) + "\" y2=\"" +
           svg_number(bottom) + "\" stroke=\"#e0e0e0\"/>\n";
    char label[48];
    std::snprintf(label, sizeof label, "%g %s", tick, unit.name);
    out += "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(bottom + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">" + svg_escape(label) + "</text>\n";
  }
  double y = 70;
  for (const auto& [title, rows] : sections) {
    out += "<text x=\"12\" y=\"" + svg_number(y + 14) + "\" font-weight=\"bold\">" +
           svg_escape(title) + "</text>\n";
    y += kSvgTitle;
    if (rows.empty()) {
      out += "<text x=\"" + svg_number(kSvgLeft) + "\" y=\"" + svg_number(y + kSvgBar) +
             "\" fill=\"#555\">none</text>\n";
      y += 2 * kSvgBar + kSvgRowGap;
    }
    for (const SvgRow& row : rows) {
      const std::int64_t delta = row.change.delta();
      const char* after = delta > 0 ? kGrewColour : delta < 0 ? kShrankColour : kSameColour;
      out += "<text x=\"" + svg_number(kSvgLeft - 8) + "\" y=\"" + svg_number(y + kSvgBar + 4) +
             "\" text-anchor=\"end\">" + svg_escape(truncate_to_width(row.label, 48, "…")) +
             "<title>" + svg_escape(row.label) + "</title></text>\n";
      out += "<rect x=\"" + svg_number(kSvgLeft) + "\" y=\"" + svg_number(y) + "\" width=\"" +
             svg_number(width_of(row.change.before.value_or(0))) + "\" height=\"" +
             svg_number(kSvgBar) + "\" fill=\"" + kBeforeColour + "\"/>\n";
      out += "<rect x=\"" + svg_number(kSvgLeft) + "\" y=\"" + svg_number(y + kSvgBar) +
             "\" width=\"" + svg_number(width_of(row.change.after.value_or(0))) + "\" height=\"" +
             svg_number(kSvgBar) + "\" fill=\"" + after + "\"/>\n";
      const double end = kSvgLeft + width_of(std::max(row.change.before.value_or(0),
                                                      row.change.after.value_or(0)));
      out += "<text x=\"" + svg_number(end + 6) + "\" y=\"" + svg_number(y + kSvgBar + 4) + "\">" +
             svg_escape(signed_bytes(delta) + " (" + percent_text(row.change) + ")") + "</text>\n";
      y += 2 * kSvgBar + kSvgRowGap;
    }
  }
  out += "<line x1=\"" + svg_number(kSvgLeft) + "\" y1=\"" + svg_number(bottom) + "\" x2=\"" +
         svg_number(kSvgWidth - kSvgRight) + "\" y2=\"" + svg_number(bottom) +
         "\" stroke=\"#333\"/>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace gpumem::cli::diff
