#include "show.hpp"

#include <nlohmann/json.hpp>

namespace gpumem::sim::tool {

std::string state_json(SharedState& state) {
  using nlohmann::json;
  const StateFile& file = state.file();
  json root;
  root["state_file"] = state.path();
  root["driver_version"] = file.driver_version;
  root["cuda_driver_version"] = file.cuda_driver_version;
  root["process_record_bytes"] = file.process_record_bytes;
  root["page_bytes"] = file.page_bytes;
  root["nvml_pid_offset"] = file.nvml_pid_offset;
  root["cuda_order"] = json::array();
  root["devices"] = json::array();
  for (unsigned i = 0; i < state.device_count(); ++i) {
    root["cuda_order"].push_back(file.cuda_order[i]);
    const DeviceRecord& device = state.device(i);
    json processes = json::array();
    for (const ProcessUsage& process : state.processes(i)) {
      processes.push_back({{"pid", process.pid}, {"used_bytes", process.bytes}});
    }
    const MemoryNumbers memory = state.memory(i);
    root["devices"].push_back({{"index", i},
                               {"name", device.name},
                               {"uuid", device.uuid},
                               {"pci_bus_id", nvml_bus_id(device.pci)},
                               {"total_bytes", memory.total},
                               {"reserved_bytes", memory.reserved},
                               {"used_bytes", memory.used},
                               {"used_peak_bytes", state.used_peak(i)},
                               {"free_bytes", memory.free()},
                               {"context_bytes", device.context_bytes},
                               {"lost", state.lost(i)},
                               {"processes", processes}});
  }
  return root.dump(2);
}

}  // namespace gpumem::sim::tool
