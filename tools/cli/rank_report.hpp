// The per-rank part of `gpumem run`'s report: each rank's peak and the device it was on, one
// summary line per rank and the JSON `ranks` table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_report.hpp"

namespace gpumem::cli {

struct RankDeviceRow {
  const DeviceTrack* device = nullptr;
  std::int64_t peak = 0;
  // Exact when the rank's processes were the command's only ones on the device and all of
  // them were counted exactly: the device's exact peak is then the rank's own. Otherwise the
  // highest sum at a sample of NVML's figures for the rank's processes.
  bool exact = false;
};

struct RankRow {
  RankInfo info;
  std::vector<unsigned> pids;
  std::vector<RankDeviceRow> devices;  // in CUDA ordinal order
  int highest = -1;                    // index in `devices` of the rank's peak (-1: none)
};

std::vector<RankRow> rank_rows(const RunResult& result);

// "gpumem: rank 0 (local 0): peak 1.0 GiB process footprint on GPU 0 (NVIDIA H200), exact
// (pid 4242)" per rank;
// empty when no process had a rank.
std::string rank_summary(const RunResult& result);

nlohmann::ordered_json ranks_json(const RunResult& result);
// A process's "rank" and "local_rank" in the run JSON (null when unknown).
void add_rank_fields(nlohmann::ordered_json& process, const RankInfo& rank);
// gpumem's own rank, for the run JSON: {"rank", "local_rank", "variable"} or null.
nlohmann::ordered_json own_rank_json(const RankInfo& rank);

}  // namespace gpumem::cli
