// What `gpumem run` reports: the summary on stderr, and the --json, --timeline and --plot files.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "run_monitor.hpp"

namespace gpumem::cli {

enum class Mode { automatic, exact, sampled };

struct RunResult {
  std::vector<std::string> command;
  ChildExit exit;
  Mode requested = Mode::automatic;
  bool exact = false;           // whether the exact counters measured the command
  std::string fallback_reason;  // why not, when exact was tried or wanted
  int exact_processes = 0;      // processes that counted their events
  double interval_s = 0;
  double elapsed_s = 0;
  std::size_t samples = 0;
  std::vector<DeviceTrack> devices;
  std::vector<ProcessPeak> processes;
};

// The command's peak on a device, in the mode that measured it.
std::int64_t command_peak(const RunResult& result, const DeviceTrack& device);

std::string summary_text(const RunResult& result);
nlohmann::ordered_json summary_json(const RunResult& result);
std::string timeline_csv(std::vector<TimelineRow> rows);

}  // namespace gpumem::cli
