// Each rank's peak per device, and whether it is exact: decided here, once, for every view of the
// run (run_result.hpp).
#include <algorithm>
#include <unordered_set>

#include "gpumem/internal/run_result.hpp"

namespace gpumem::run {

std::vector<RankRow> rank_rows(const RunResult& result) {
  // An exactly counted process NVML never showed may have held memory on any device: then no
  // device's exact peak can be given to one rank.
  std::unordered_set<unsigned> seen_exact;
  for (const ProcessReport& process : result.processes) {
    if (process.exact) seen_exact.insert(process.peak.pid);
  }
  const bool all_exact_seen = static_cast<int>(seen_exact.size()) >= result.exact_processes;

  std::vector<RankRow> rows;
  for (const RankPeaks& rank : result.ranks) {
    RankRow row{rank.info, rank.pids, {}, -1};
    const std::unordered_set<unsigned> own(rank.pids.begin(), rank.pids.end());
    for (const RankDevicePeak& peak : rank.devices) {
      const auto device =
          std::find_if(result.devices.begin(), result.devices.end(),
                       [&](const DeviceTrack& track) { return track.info.device == peak.device; });
      if (device == result.devices.end()) continue;
      RankDeviceRow cell{&*device, peak.peak, false};
      bool alone = all_exact_seen && result.measured != Measured::sampled;
      bool exact = true;
      for (const ProcessReport& process : result.processes) {
        if (process.peak.device != peak.device) continue;
        // Ranks hold pids in gpumem's namespace; an NVML pid matched to none is never the rank's.
        const int local = process.peak.local_pid;
        if (local <= 0 || own.count(static_cast<unsigned>(local)) == 0) alone = false;
        exact = exact && process.exact;
      }
      if (alone && exact) {
        cell.peak = std::max(cell.peak, command_peak(result, *device));
        cell.exact = true;
      }
      row.devices.push_back(cell);
    }
    for (std::size_t index = 0; index < row.devices.size(); ++index) {
      if (row.highest < 0 || row.devices[index].peak > row.devices[row.highest].peak)
        row.highest = static_cast<int>(index);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gpumem::run
