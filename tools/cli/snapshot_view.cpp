#include "snapshot_view.hpp"

#include "format.hpp"
#include "gpumem/diagnostics.hpp"
#include "table.hpp"

namespace gpumem::cli {
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
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

std::string no_device_message() {
  const std::vector<std::string> why = diagnostics();
  std::string message = "no GPU found";
  if (!why.empty()) {
    message += ": ";
    for (std::size_t i = 0; i < why.size(); ++i) message += (i > 0 ? "; " : "") + why[i];
  }
  return message;
}

std::string snapshot_table(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks) {
  std::vector<std::string> headers = {">GPU",   ">NVML", "NAME",  "UUID",     "PCI BUS ID",
                                      ">TOTAL", ">USED", ">FREE", ">RESERVED"};
  if (!peaks.empty()) headers.push_back(">PEAK USED");
  Table devices_table(headers);
  Table processes_table({">GPU", ">PID", "PROCESS", ">MEMORY"});
  for (const DeviceSnapshot& device : snapshot) {
    const GPUMemoryBytes& memory = device.info.memory;
    std::vector<std::string> row = {std::to_string(device.info.ordinal),
                                    std::to_string(device.info.nvml_index),
                                    device.info.name,
                                    device.info.uuid,
                                    device.info.pci_bus_id,
                                    memory_cell(device, memory.total),
                                    memory_cell(device, memory.used),
                                    memory_cell(device, memory.free),
                                    memory_cell(device, memory.reserved)};
    if (!peaks.empty()) {
      auto peak = peaks.find(device.info.ordinal);
      row.push_back(peak == peaks.end() ? "?" : format_bytes(peak->second));
    }
    devices_table.add_row(std::move(row));
    for (const ProcessRow& process : device.processes) {
      processes_table.add_row({std::to_string(device.info.ordinal), std::to_string(process.pid),
                               process.name.empty() ? "?" : process.name,
                               process.used_bytes
                                   ? format_bytes(static_cast<std::int64_t>(*process.used_bytes))
                                   : "n/a"});
    }
  }
  std::string out = devices_table.render() + "\n";
  out += processes_table.empty() ? "No processes use GPU memory.\n" : processes_table.render();
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
    devices_json.push_back({{"device", device.info.ordinal},
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
        std::to_string(device.info.ordinal) + "," + std::to_string(device.info.nvml_index) + "," +
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
