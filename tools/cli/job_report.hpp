// `gpumem report`'s model is the library's gpumem.report/1 (report_document.hpp): run files
// combined into peaks per rank, node and device and the job's headline, decided there; the
// command reads, renders and writes it.
#pragma once

#include <optional>
#include <string>

#include "gpumem/internal/report_document.hpp"

namespace gpumem::cli {

using run::combine_runs;
using run::JobDevice;
using run::JobInput;
using run::JobNode;
using run::JobRank;
using run::JobReport;
using run::RunFile;

// "rank 3 (local 1)", "local rank 1", for tables and messages.
std::string rank_label(const std::optional<int>& rank, const std::optional<int>& local_rank);

}  // namespace gpumem::cli
