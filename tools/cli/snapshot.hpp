// What `list` and `watch` show: every visible device, its memory and the processes on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/device.hpp"

namespace gpumem::cli {

struct ProcessRow {
  unsigned pid = 0;
  std::string name;  // /proc/<pid>/comm; empty where it cannot be read (another container)
  std::optional<std::uint64_t> used_bytes;
};

struct DeviceSnapshot {
  DeviceInfo info;
  bool memory_known = false;  // false when the memory reading failed (device lost)
  std::vector<ProcessRow> processes;
};

std::vector<DeviceSnapshot> take_snapshot();

// The process's command name, empty when unknown.
std::string process_name(unsigned pid);

}  // namespace gpumem::cli
