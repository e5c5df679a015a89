// The per-rank part of `gpumem run`'s report: each rank's peak and the device it was on, one
// summary line per rank and the JSON `ranks` table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_report.hpp"

namespace gpumem::cli {

// Each rank's rows are the library's (run::rank_rows): these render them.
using run::rank_rows;
using run::RankDeviceRow;
using run::RankRow;

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
