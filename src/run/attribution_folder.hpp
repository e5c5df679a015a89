// `gpumem run --attribute/--html`: the folder the measured processes write their attribution
// snapshots into (each its own peaks at exit, its out-of-memory document at a failure), and the
// one gpumem.attribution/1 document the run makes of them.
#pragma once

#include <string>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"
#include "run/monitor.hpp"

namespace gpumem::run {

// A private temporary folder, removed with everything in it when this goes.
class AttributionFolder {
 public:
  AttributionFolder() = default;
  AttributionFolder(const AttributionFolder&) = delete;
  AttributionFolder& operator=(const AttributionFolder&) = delete;
  ~AttributionFolder();
  bool create(std::string* error);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The processes' documents in `folder` as one: their frames and stacks appended and reindexed;
// each process's devices found among the monitor's by UUID and numbered as gpumem numbers them
// (a device it does not measure gets an ordinal after them); the times moved onto the run's
// clock; each out-of-memory failure given the device's other processes as the monitor's NVML
// sample nearest before it listed them; and the exact timeline. `warnings` gets a line per file
// that could not be read. Call after monitor.stop().
detail::attribution::Document combine_attribution(const std::string& folder,
                                                  const std::string& command,
                                                  const std::string& host,
                                                  const RunMonitor& monitor,
                                                  std::vector<std::string>* warnings);

}  // namespace gpumem::run
