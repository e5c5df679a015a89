#include "run/rank_tracker.hpp"

#include <algorithm>
#include <tuple>

namespace gpumem::run {
namespace {

// Processes of one rank share it whatever their local rank says; without a rank, the local rank
// names them.
bool same_rank(const RankInfo& a, const RankInfo& b) {
  if (a.rank || b.rank) return a.rank == b.rank;
  return a.local_rank == b.local_rank;
}

}  // namespace

std::size_t RankTracker::rank_index(const RankInfo& info) {
  for (std::size_t index = 0; index < ranks_.size(); ++index) {
    if (same_rank(ranks_[index].info, info)) return index;
  }
  ranks_.push_back({info, {}, {}});
  return ranks_.size() - 1;
}

const RankInfo& RankTracker::observe(unsigned pid, int device, std::int64_t bytes) {
  auto found = process_ranks_.find(pid);
  if (found == process_ranks_.end()) {
    found = process_ranks_.emplace(pid, process_rank(static_cast<int>(pid))).first;
    if (found->second.known()) {
      RankPeaks& rank = ranks_[rank_index(found->second)];
      rank.pids.push_back(pid);
      if (!rank.info.local_rank && found->second.local_rank) rank.info = found->second;
    }
  }
  const RankInfo& info = found->second;
  if (!info.known()) return info;
  const std::size_t index = rank_index(info);
  auto level = std::find_if(levels_.begin(), levels_.end(), [&](const Level& known) {
    return known.rank == index && known.device == device;
  });
  if (level == levels_.end()) {
    levels_.push_back({index, device, bytes});
  } else {
    level->bytes += bytes;
  }
  return info;
}

void RankTracker::end_sample(double time_s) {
  for (const Level& level : levels_) {
    std::vector<RankDevicePeak>& devices = ranks_[level.rank].devices;
    auto known = std::find_if(devices.begin(), devices.end(), [&](const RankDevicePeak& peak) {
      return peak.device == level.device;
    });
    if (known == devices.end()) {
      devices.push_back({level.device, level.bytes, time_s});
    } else if (level.bytes > known->peak) {
      known->peak = level.bytes;
      known->peak_time_s = time_s;
    }
  }
  levels_.clear();
}

std::vector<RankPeaks> RankTracker::ranks() const {
  std::vector<RankPeaks> out = ranks_;
  for (RankPeaks& rank : out) {
    std::sort(rank.devices.begin(), rank.devices.end(),
              [](const RankDevicePeak& a, const RankDevicePeak& b) { return a.device < b.device; });
  }
  std::sort(out.begin(), out.end(), [](const RankPeaks& a, const RankPeaks& b) {
    return std::make_tuple(!a.info.rank, a.info.rank.value_or(0), a.info.local_rank.value_or(0)) <
           std::make_tuple(!b.info.rank, b.info.rank.value_or(0), b.info.local_rank.value_or(0));
  });
  return out;
}

}  // namespace gpumem::run
