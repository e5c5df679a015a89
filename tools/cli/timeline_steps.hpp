// A run's timeline as step functions: the exact level at each event and the contexts the samples
// estimated, combined into the footprint that the run's peak is of (the plot, the attribution
// document's timeline).
#pragma once

#include <map>
#include <vector>

#include "run_monitor.hpp"
#include "step_coalescer.hpp"

namespace gpumem::cli {

// A step function's level at `time_ns`: the last step at or before it, else the first (what a
// context estimate says before the first sample that read it). `steps` in time order.
std::int64_t level_at(const std::vector<Step>& steps, std::int64_t time_ns);

// The exactly counted processes' footprint: their events' level plus their contexts, at every
// time either changes, in time order.
std::vector<Step> footprint_steps(std::vector<Step> exact, std::vector<Step> contexts);

// The timeline's rows of one series, per device ordinal, as steps in time order.
std::map<int, std::vector<Step>> series_steps(const std::vector<TimelineRow>& timeline,
                                              Series series);

}  // namespace gpumem::cli
