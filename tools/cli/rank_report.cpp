#include "rank_report.hpp"

#include <algorithm>
#include <unordered_set>

#include "format.hpp"
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

}  // namespace gpumem::cli
