// The engine of `gpumem run`: it measures a command that the caller launches. It owns the file
// shared with the command's injected processes, the monitor that samples NVML and reads those
// counters, the matching of NVML's pids to the command's processes, ranks, the holders' history,
// the mode and the headline figure, and returns everything as one RunResult. The caller keeps
// the options, launching the command (with child_environment()) and showing the result.
//
//   run::Engine engine(measured_devices, keep_timeline);
//   engine.count_exactly(inject_library, &why);      // else sampled, and why
//   engine.baseline();                               // right before the command starts
//   start the command with engine.child_environment(environ)
//   engine.start(child_pid, interval_s);
//   wait for it (and its descendants), then engine.stop();
//   engine.finish(result);                           // result.command etc. set by the caller
//
// A seam (src/run implements it): exported from libgpumem.so for the gpumem command, never
// installed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpumem/device.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/run_result.hpp"

#pragma GCC visibility push(default)

namespace gpumem::run {

// The folder for temporary files: $TMPDIR, else /tmp.
std::string temporary_folder();

class Engine {
 public:
  // Measures `devices` (those the caller chose of the visible ones, in CUDA ordinal order).
  // `keep_timeline` keeps every sample and event step (for a timeline, a plot, attribution).
  Engine(std::vector<DeviceInfo> devices, bool keep_timeline);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Counts every CUDA process of the command exactly, through the injection library at
  // `inject_library`: creates the shared counters file (private to this user, removed with the
  // engine; a killed run's stale files are removed first). false with `why` when it cannot.
  bool count_exactly(const std::string& inject_library, std::string* why);
  bool exact() const;
  // Asks each injected process for its attribution snapshots (after count_exactly): a private
  // folder, removed with the engine. false with `why` when it cannot be created.
  bool collect_attribution(std::string* why);

  // The environment the command runs with: `environment` (NAME=VALUE entries, as environ) less
  // an outer run's variables that this run replaces, plus this run's.
  std::vector<std::string> child_environment(char* const* environment) const;

  // Reads the devices' starting levels and sets the timeline's zero: right before the command
  // starts.
  void baseline();
  // Samples the process tree rooted at `root` (the command) every `interval_s` seconds.
  void start(int root, double interval_s);
  // After the command (and the descendants waited for) ended: one last sample, then no more.
  void stop();
  // The measurement into `result` (after stop()): its devices' peaks, processes, ranks, mode,
  // timeline. `result.fallback_reason` may already say why exact counting was not tried.
  void finish(RunResult& result) const;
  // The processes' attribution snapshots as one document (after stop(), with
  // collect_attribution()): devices numbered as gpumem numbers them, times on the run's clock,
  // levels with the contexts the monitor reconciled. `warnings` gets a line per problem.
  detail::attribution::Document attribution(const std::string& command, const std::string& host,
                                            std::vector<std::string>* warnings) const;

 private:
  struct __attribute__((visibility("hidden"))) State;  // nobody else's business
  std::unique_ptr<State> state_;
};

}  // namespace gpumem::run

#pragma GCC visibility pop
