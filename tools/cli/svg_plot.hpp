// A self-contained SVG chart of a run: one panel per device with memory over time, the
// command's peak marked and labelled, axes in binary units with round ticks.
#pragma once

#include <string>
#include <vector>

#include "run_report.hpp"

namespace gpumem::cli {

std::string svg_plot(const RunResult& result, const std::vector<TimelineRow>& timeline);

// Round tick values (1, 2 or 5 times a power of ten) covering [0, max], about `target` of them.
std::vector<double> nice_ticks(double max, int target);

}  // namespace gpumem::cli
