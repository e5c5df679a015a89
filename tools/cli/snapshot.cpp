#include "snapshot.hpp"

#include "gpumem/internal/procfs.hpp"
#include "gpumem/memory.hpp"

namespace gpumem::cli {

std::string process_name(unsigned pid) {
  return procfs::command_name("/proc", std::to_string(pid)).value_or("");
}

std::vector<DeviceSnapshot> take_snapshot() {
  std::vector<DeviceSnapshot> snapshot;
  for (DeviceInfo& info : devices()) {
    DeviceSnapshot device;
    device.memory_known = info.memory.total != 0;  // devices() has just read it
    for (const ProcessMemory& process : device_processes(info.device)) {
      device.processes.push_back({process.pid, process_name(process.pid), process.used_bytes});
    }
    device.info = std::move(info);
    snapshot.push_back(std::move(device));
  }
  return snapshot;
}

}  // namespace gpumem::cli
