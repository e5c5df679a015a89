// `gpumem run --attribute/--html`: the folder the measured processes write their attribution
// snapshots into (each its own peaks at exit, its out-of-memory document at a failure), and the
// one gpumem.attribution/1 document the run makes of them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attribution/document.hpp"
#include "attribution/views.hpp"
#include "gpumem/device.hpp"
#include "run_monitor.hpp"

namespace gpumem::cli {

// The variable that asks the injection library to attribute, naming the folder.
inline constexpr const char* kRunAttributionDirVariable = "GPUMEM_RUN_ATTRIBUTION_DIR";

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
attribution::Document combine_attribution(const std::string& folder, const std::string& command,
                                          const std::string& host, const RunMonitor& monitor,
                                          std::vector<std::string>* warnings);

// What the terminal summary adds: the top stacks at the highest peak and at each
// out-of-memory failure.
std::string attribution_summary(const attribution::Document& document, std::size_t top,
                                const attribution::TextOptions& options);

}  // namespace gpumem::cli
