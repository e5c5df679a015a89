#include "job_report.hpp"

namespace gpumem::cli {

std::string rank_label(const std::optional<int>& rank, const std::optional<int>& local_rank) {
  if (!rank) return local_rank ? "local rank " + std::to_string(*local_rank) : "no rank";
  std::string out = "rank " + std::to_string(*rank);
  if (local_rank) out += " (local " + std::to_string(*local_rank) + ")";
  return out;
}

}  // namespace gpumem::cli
