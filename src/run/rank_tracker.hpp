// The ranks of a measured command's GPU processes and each rank's peak on each device: at every
// sample, what the rank's processes held on a device (NVML's per-process figures) is summed,
// and the highest sum is kept.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gpumem/internal/run_result.hpp"

namespace gpumem::run {

class RankTracker {
 public:
  // A process's usage on a device at the current sample. Its rank is read from its environment
  // the first time it is seen, and returned.
  const RankInfo& observe(unsigned pid, int device, std::int64_t bytes);
  // Ends a sample: each rank's sums become candidates for its peaks.
  void end_sample(double time_s);
  // The ranks seen, by rank (processes with only a local rank after them, by local rank).
  std::vector<RankPeaks> ranks() const;

 private:
  struct Level {
    std::size_t rank;  // index into ranks_
    int device;
    std::int64_t bytes;
  };
  std::size_t rank_index(const RankInfo& info);

  std::unordered_map<unsigned, RankInfo> process_ranks_;
  std::vector<RankPeaks> ranks_;
  std::vector<Level> levels_;  // of the current sample
};

}  // namespace gpumem::run
