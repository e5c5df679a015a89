// What `gpumem run` reports: the summary on stderr, and the --json, --timeline and --plot files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "rank_tracker.hpp"
#include "run_budget.hpp"
#include "run_monitor.hpp"

namespace gpumem::cli {

enum class Mode { automatic, exact, sampled };
// How the run was measured: every GPU process exactly, some of them, or none.
enum class Measured { exact, mixed, sampled };

// One GPU process of the command on one device, and how it was measured.
struct ProcessReport {
  ProcessPeak peak;
  bool exact = false;
  std::string reason;  // why not exact
};
struct RunResult {
  std::vector<std::string> command;
  ChildExit exit;
  Mode requested = Mode::automatic;
  Measured measured = Measured::sampled;
  std::string fallback_reason;     // why not every process was exact, when exact was tried
  int exact_processes = 0;         // processes that counted their events
  int escaped_processes = 0;       // GPU processes (or attached ones) not counted exactly
  double descendants_wait_s = 0;   // the bound; 0 when not waited for
  bool descendants_waited = true;  // false: --no-wait-descendants
  // Adopted descendants still running at the bound, or, not waited for, when the command exited.
  std::vector<int> descendants_running;
  double interval_s = 0;
  double elapsed_s = 0;
  std::size_t samples = 0;
  std::vector<DeviceTrack> devices;
  std::vector<ProcessReport> processes;
  // NVML's pids are another namespace's (gpumem runs in a container), and why; how many of them
  // were matched to the command's injected processes, and how many stayed unmatched.
  bool nvml_pids_foreign = false;
  std::string pid_namespace_reason;
  std::size_t matched_pids = 0;
  int unmapped_processes = 0;
  bool nested_namespaces = false;  // some of the command's processes ran in a nested namespace
  std::string no_gpu_reason;       // no GPU to measure: why (as `gpumem list` says it)
  bool no_gpu = false;
  double start_unix_s = 0;       // wall clock when the command started, and when gpumem
  double end_unix_s = 0;         // stopped measuring it (Unix time, seconds)
  std::string host;              // the node gpumem ran on (--host, else its host name)
  RankInfo own_rank;             // from gpumem's own environment (one per node under srun)
  std::vector<RankPeaks> ranks;  // the GPU processes' ranks, from their environments
  // --max-peak: the verdict on each device with a budget; empty without budgets.
  std::vector<BudgetVerdict> budgets;
};

const char* to_string(Measured measured);

// The command's peak on a device, in the mode that measured it.
std::int64_t command_peak(const RunResult& result, const DeviceTrack& device);
// How far the device's used memory rose over the run (peak minus start).
std::int64_t device_rise(const DeviceTrack& device);
// When it happened, in seconds since the command started.
double command_peak_time(const RunResult& result, const DeviceTrack& device);

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
nlohmann::ordered_json summary_json(const RunResult& result);
std::string timeline_csv(std::vector<TimelineRow> rows);

}  // namespace gpumem::cli
