#include "rank_report.hpp"

#include <algorithm>
#include <unordered_set>

#include "format.hpp"
#include "json_null.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

std::string rank_name(const RankInfo& info) {
  std::string out = info.rank ? "rank " + std::to_string(*info.rank) : "rank ?";
  if (info.local_rank) out += " (local " + std::to_string(*info.local_rank) + ")";
  return out;
}

}  // namespace

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

std::string rank_summary(const RunResult& result) {
  std::string out;
  for (const RankRow& row : rank_rows(result)) {
    out += "gpumem: " + rank_name(row.info) + ": ";
    if (row.highest < 0) {
      out += "no memory on a measured GPU";
    } else {
      const RankDeviceRow& cell = row.devices[row.highest];
      out += "peak " + format_bytes(cell.peak) + " process footprint on GPU " +
             std::to_string(cell.device->info.device) + " (" + printable(cell.device->info.name) +
             "), " + (cell.exact ? "exact" : "sampled every " + format_seconds(result.interval_s));
      if (row.devices.size() > 1) out += ", " + std::to_string(row.devices.size()) + " GPUs used";
    }
    out += row.pids.size() == 1 ? " (pid" : " (pids";
    for (unsigned pid : row.pids) out += " " + std::to_string(pid);
    out += ")\n";
  }
  return out;
}

nlohmann::ordered_json ranks_json(const RunResult& result) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const RankRow& row : rank_rows(result)) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const RankDeviceRow& cell : row.devices) {
      devices.push_back({{"device", cell.device->info.device},
                         {"uuid", cell.device->info.uuid},
                         {"peak_bytes", cell.peak},
                         {"measured", cell.exact ? "exact" : "sampled"}});
    }
    const RankDeviceRow* highest = row.highest < 0 ? nullptr : &row.devices[row.highest];
    out.push_back({
        {"rank", json_or_null(row.info.rank)},
        {"local_rank", json_or_null(row.info.local_rank)},
        {"pids", row.pids},
        {"peak_bytes", highest != nullptr ? highest->peak : 0},
        {"device", highest != nullptr ? nlohmann::ordered_json(highest->device->info.device)
                                      : nlohmann::ordered_json()},
        {"uuid", highest != nullptr ? nlohmann::ordered_json(highest->device->info.uuid)
                                    : nlohmann::ordered_json()},
        {"measured", highest != nullptr && highest->exact ? "exact" : "sampled"},
        {"devices", devices},
    });
  }
  return out;
}

void add_rank_fields(nlohmann::ordered_json& process, const RankInfo& rank) {
  process["rank"] = json_or_null(rank.rank);
  process["local_rank"] = json_or_null(rank.local_rank);
}

nlohmann::ordered_json own_rank_json(const RankInfo& rank) {
  if (!rank.known()) return nullptr;
  return {{"rank", json_or_null(rank.rank)},
          {"local_rank", json_or_null(rank.local_rank)},
          {"variable", rank.rank ? rank.rank_variable : rank.local_variable}};
}

}  // namespace gpumem::cli
