#include "snapshot_view.hpp"

#include <algorithm>

#include "bar.hpp"
#include "fitted_table.hpp"
#include "format.hpp"
#include "gpumem/diagnostics.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

// A name as a CSV field: shown through printable() (CSV is read on terminals too: no control,
// bidirectional or invisible character, and so no line break, in it), quoted where it must be.
std::string csv_field(const std::string& name) {
  const std::string text = printable(name);
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string memory_cell(const DeviceSnapshot& device, std::uint64_t bytes) {
  return device.memory_known ? format_bytes(static_cast<std::int64_t>(bytes)) : "?";
}

}  // namespace

std::string no_device_reason() {
  const std::vector<std::string> why = diagnostics();
  std::string reason;
  for (std::size_t i = 0; i < why.size(); ++i) reason += (i > 0 ? "; " : "") + why[i];
  return reason;
}

std::string no_device_message() {
  const std::string why = no_device_reason();
  // The reason may name a library path from the environment: shown through printable().
  return why.empty() ? "no GPU found" : "no GPU found: " + printable(why);
}

namespace {

// The devices table's columns and the order in which they give way (snapshot_view.hpp).
FitLayout devices_layout(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks,
                         const TextStyle& style) {
  std::vector<std::string> uuids;
  for (const DeviceSnapshot& device : snapshot) uuids.push_back(printable(device.info.uuid));
  enum : std::size_t {
    kGpu,
    kNvml,
    kName,
    kUuid,
    kPci,
    kTotal,
    kUsed,
    kFree,
    kReserved,
    kPeak,
    kBar
  };
  FitLayout layout{{{">GPU"},
                    {">NVML"},
                    {"NAME", {}, {}, 10},
                    {"UUID", {}, unique_prefixes(uuids, 12)},
                    {"PCI BUS ID"},
                    {">TOTAL"},
                    {">USED"},
                    {">FREE"},
                    {">RESERVED"},
                    {">PEAK USED"},
                    {"USED OF TOTAL"}},
                   {{FitStep::drop, kPci},
                    {FitStep::shorten, kUuid},
                    {FitStep::drop, kReserved},
                    {FitStep::drop, kNvml},
                    {FitStep::drop, kUuid},
                    {FitStep::shorten, kName}}};
  std::vector<BarValues> bars;
  auto& columns = layout.columns;
  for (const DeviceSnapshot& device : snapshot) {
    const GPUMemoryBytes& memory = device.info.memory;
    columns[kGpu].cells.push_back(std::to_string(device.info.device));
    columns[kNvml].cells.push_back(std::to_string(device.info.nvml_index));
    columns[kName].cells.push_back(printable(device.info.name));
    columns[kName].short_cells.push_back(printable(without_vendor(device.info.name)));
    columns[kUuid].cells.push_back(printable(device.info.uuid));
    columns[kPci].cells.push_back(printable(device.info.pci_bus_id));
    columns[kTotal].cells.push_back(memory_cell(device, memory.total));
    columns[kUsed].cells.push_back(memory_cell(device, memory.used));
    columns[kFree].cells.push_back(memory_cell(device, memory.free));
    columns[kReserved].cells.push_back(memory_cell(device, memory.reserved));
    const auto peak = peaks.find(device.info.device);
    columns[kPeak].cells.push_back(peak != peaks.end() ? format_bytes(peak->second) : "?");
    BarValues values{memory.used, device.memory_known ? memory.total : 0, std::nullopt};
    if (peak != peaks.end()) {
      values.peak = static_cast<std::uint64_t>(std::max<std::int64_t>(0, peak->second));
    }
    bars.push_back(values);
  }
  FitColumn& bar = columns[kBar];
  bar.draw = [bars, style](std::size_t row, std::size_t width) {
    return usage_bar(bars.at(row), width - bar_width(0), style);
  };
  bar.min_width = bar_width(8);
  bar.max_width = bar_width(40);
  bar.wide_width = bar_width(20);
  if (peaks.empty()) {
    // `list` has no peak: the column goes for good (no step brings it back).
    columns.erase(columns.begin() + kPeak);
    for (FitStep& step : layout.steps) {
      if (step.column > kPeak) --step.column;
    }
  }
  return layout;
}

FitLayout processes_layout(const std::vector<DeviceSnapshot>& snapshot) {
  FitLayout layout{{{">GPU"}, {">PID"}, {"PROCESS", {}, {}, 8}, {">MEMORY"}}, {}};
  for (const DeviceSnapshot& device : snapshot) {
    for (const ProcessRow& process : device.processes) {
      layout.columns[0].cells.push_back(std::to_string(device.info.device));
      layout.columns[1].cells.push_back(std::to_string(process.pid));
      layout.columns[2].cells.push_back(process.name.empty() ? "?" : printable(process.name));
      layout.columns[3].cells.push_back(
          process.used_bytes ? format_bytes(static_cast<std::int64_t>(*process.used_bytes))
                             : "n/a");
    }
  }
  return layout;
}

}  // namespace

std::string snapshot_table(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks,
                           const TableOptions& options) {
  const std::string ellipsis = options.style.unicode ? "…" : "~";
  std::string out =
      fit_table(devices_layout(snapshot, peaks, options.style), options.width, ellipsis);
  if (!peaks.empty()) {
    const std::string legend = options.style.unicode
                                   ? "bars: █ used now, ░ highest used since the watch began"
                                   : "bars: # used now, = highest used since the watch began";
    out += (options.width ? truncate_to_width(legend, *options.width, ellipsis) : legend) + "\n";
  }
  const FitLayout processes = processes_layout(snapshot);
  out += "\n";
  out += processes.columns[0].cells.empty() ? "No processes use GPU memory.\n"
                                            : fit_table(processes, options.width, ellipsis);
  return out;
}

nlohmann::ordered_json snapshot_json(const std::vector<DeviceSnapshot>& snapshot) {
  nlohmann::ordered_json devices_json = nlohmann::ordered_json::array();
  for (const DeviceSnapshot& device : snapshot) {
    nlohmann::ordered_json processes = nlohmann::ordered_json::array();
    for (const ProcessRow& process : device.processes) {
      processes.push_back(
          {{"pid", process.pid},
           {"name", process.name},
           {"used_bytes", process.used_bytes ? nlohmann::ordered_json(*process.used_bytes)
                                             : nlohmann::ordered_json(nullptr)}});
    }
    nlohmann::ordered_json memory = nullptr;
    if (device.memory_known) {
      memory = {{"total_bytes", device.info.memory.total},
                {"used_bytes", device.info.memory.used},
                {"free_bytes", device.info.memory.free},
                {"reserved_bytes", device.info.memory.reserved}};
    }
    devices_json.push_back({{"device", device.info.device},
                            {"nvml_index", device.info.nvml_index},
                            {"name", device.info.name},
                            {"uuid", device.info.uuid},
                            {"pci_bus_id", device.info.pci_bus_id},
                            {"memory", memory},
                            {"processes", processes}});
  }
  return devices_json;
}

std::string snapshot_csv(const std::vector<DeviceSnapshot>& snapshot) {
  std::string out =
      "device,nvml_index,name,uuid,pci_bus_id,total_bytes,used_bytes,free_bytes,reserved_bytes,"
      "pid,process_name,process_used_bytes\n";
  for (const DeviceSnapshot& device : snapshot) {
    const GPUMemoryBytes& memory = device.info.memory;
    auto number = [&](std::uint64_t value) {
      return device.memory_known ? std::to_string(value) : std::string();
    };
    const std::string prefix =
        std::to_string(device.info.device) + "," + std::to_string(device.info.nvml_index) + "," +
        csv_field(device.info.name) + "," + csv_field(device.info.uuid) + "," +
        csv_field(device.info.pci_bus_id) + "," + number(memory.total) + "," + number(memory.used) +
        "," + number(memory.free) + "," + number(memory.reserved) + ",";
    if (device.processes.empty()) out += prefix + ",,\n";
    for (const ProcessRow& process : device.processes) {
      out += prefix + std::to_string(process.pid) + "," + csv_field(process.name) + "," +
             (process.used_bytes ? std::to_string(*process.used_bytes) : std::string()) + "\n";
    }
  }
  return out;
}

}  // namespace gpumem::cli
