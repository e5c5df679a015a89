// The snapshot as text (table), JSON and CSV, shared by `list` and `watch`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "snapshot.hpp"

namespace gpumem::cli {

// Peaks since the watch began, by CUDA ordinal; empty for `list`.
using PeakByDevice = std::map<int, std::int64_t>;

std::string snapshot_table(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks);
nlohmann::ordered_json snapshot_json(const std::vector<DeviceSnapshot>& snapshot);
std::string snapshot_csv(const std::vector<DeviceSnapshot>& snapshot);
// One line naming why no device is visible ("no GPU found: NVML not found").
std::string no_device_message();

}  // namespace gpumem::cli
