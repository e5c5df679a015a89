// The snapshot as text (table), JSON and CSV, shared by `list` and `watch`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "snapshot.hpp"
#include "terminal.hpp"

namespace gpumem::cli {

// Peaks since the watch began, by CUDA ordinal; empty for `list`.
using PeakByDevice = std::map<int, std::int64_t>;

struct TableOptions {
  std::optional<std::size_t> width;  // none: every column in full, untruncated (`--wide`)
  TextStyle style;
};

// The devices table, each device's used memory as a bar (and the peak since the watch began,
// with a legend, when `peaks` is not empty), then the processes table. Fitted to the width:
// first the PCI bus id goes, then UUIDs are cut to a unique prefix (CUDA_VISIBLE_DEVICES takes
// one), then the RESERVED, NVML and UUID columns go, the "NVIDIA " before names, and at last
// names are cut. GPU, NAME, TOTAL, USED, FREE (and PEAK USED) always stay.
std::string snapshot_table(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks,
                           const TableOptions& options);
nlohmann::ordered_json snapshot_json(const std::vector<DeviceSnapshot>& snapshot);
std::string snapshot_csv(const std::vector<DeviceSnapshot>& snapshot);
// One line naming why no device is visible ("no GPU found: NVML not found").
std::string no_device_message();
// Why no GPU was found (the library's diagnostics, joined by "; "); empty when it gave none.
std::string no_device_reason();

}  // namespace gpumem::cli
