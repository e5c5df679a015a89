// The per-rank part of `gpumem run`'s summary: each rank's peak and the device it was on, one
// line per rank (the run document's `ranks` table is the library's: run_document.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace gpumem::cli
