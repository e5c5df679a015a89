#include "gpumem/internal/run_timeline.hpp"

#include <algorithm>
#include <cmath>

namespace gpumem::run {
namespace {

bool earlier(const Step& a, const Step& b) {
  return a.time_ns < b.time_ns;
}

}  // namespace

const char* to_string(Series series) {
  switch (series) {
    case Series::process:
      return "process";
    case Series::tree:
      return "tree";
    case Series::exact:
      return "exact";
    case Series::device:
      return "device";
    case Series::context:
      return "context";
  }
  return "?";
}

std::int64_t level_at(const std::vector<Step>& steps, std::int64_t time_ns) {
  if (steps.empty()) return 0;
  const auto after =
      std::upper_bound(steps.begin(), steps.end(), time_ns,
                       [](std::int64_t t, const Step& step) { return t < step.time_ns; });
  return after == steps.begin() ? after->level : std::prev(after)->level;
}

std::vector<Step> footprint_steps(std::vector<Step> exact, std::vector<Step> contexts) {
  std::stable_sort(exact.begin(), exact.end(), earlier);
  std::stable_sort(contexts.begin(), contexts.end(), earlier);
  std::vector<Step> steps;
  steps.reserve(exact.size() + contexts.size());
  for (const Step& step : exact)
    steps.push_back({step.time_ns, step.level + level_at(contexts, step.time_ns)});
  for (const Step& step : contexts)
    steps.push_back({step.time_ns, level_at(exact, step.time_ns) + step.level});
  std::stable_sort(steps.begin(), steps.end(), earlier);
  return steps;
}

std::map<int, std::vector<Step>> series_steps(const std::vector<TimelineRow>& timeline,
                                              Series series) {
  std::map<int, std::vector<Step>> steps;
  for (const TimelineRow& row : timeline) {
    if (row.series != series) continue;
    steps[row.device].push_back(
        {static_cast<std::int64_t>(std::llround(row.time_s * 1e9)), row.bytes});
  }
  for (auto& [device, list] : steps) std::stable_sort(list.begin(), list.end(), earlier);
  return steps;
}

}  // namespace gpumem::run
