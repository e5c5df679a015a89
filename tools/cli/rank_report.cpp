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
