#include "snapshot.hpp"

#include <fstream>

#include "gpumem/memory.hpp"

namespace gpumem::cli {

std::string process_name(unsigned pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

std::vector<DeviceSnapshot> take_snapshot() {
  std::vector<DeviceSnapshot> snapshot;
  for (DeviceInfo& info : devices()) {
    DeviceSnapshot device;
    device.memory_known = info.memory.total != 0;  // devices() has just read it
    for (const ProcessMemory& process : device_processes(info.ordinal)) {
      device.processes.push_back({process.pid, process_name(process.pid), process.used_bytes});
    }
    device.info = std::move(info);
    snapshot.push_back(std::move(device));
  }
  return snapshot;
}

}  // namespace gpumem::cli
