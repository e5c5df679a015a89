// What `gpumem run` reports: the summary on stderr, and the --json, --timeline and --plot files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpumem/internal/run_result.hpp"
#include "gpumem/internal/run_timeline.hpp"

namespace gpumem::cli {

using run::ChildExit;
using run::command_peak;
using run::command_peak_time;
using run::device_rise;
using run::device_used;
using run::DeviceTrack;
using run::Measured;
using run::Mode;
using run::ProcessPeak;
using run::ProcessReport;
using run::RankDevicePeak;
using run::RankInfo;
using run::RankPeaks;
using run::RunResult;
using run::Series;
using run::signal_name;
using run::TimelineRow;

// How the summary is laid out: lines longer than `width` columns wrap at spaces (a word longer
// than the line is broken, never cut), continued after an indent; none when `width` is unset.
// `unicode`: ranges of GPUs with an en dash ("GPUs 1–7"), else a hyphen.
struct SummaryStyle {
  std::optional<std::size_t> width;
  bool unicode = false;
};

std::string summary_text(const RunResult& result, const SummaryStyle& style = {});
// "1", "0, 1", "1, 3–7": ordinals (sorted, distinct), three or more consecutive as a range.
std::string ordinal_ranges(const std::vector<int>& ordinals, bool unicode);
// Each line of `text` wrapped to `width` columns (above).
std::string wrap_lines(const std::string& text, std::size_t width);
std::string timeline_csv(std::vector<TimelineRow> rows);

}  // namespace gpumem::cli
