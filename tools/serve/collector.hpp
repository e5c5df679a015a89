// Builds a Snapshot from the devices, the window peaks and the spool directories, at scrape time.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exposition.hpp"
#include "window_peak.hpp"

namespace gpumem::serve {

struct CollectorOptions {
  std::string host;
  std::vector<std::filesystem::path> spools;
  std::chrono::seconds retention{300};  // keep an exited process's results this long
  std::chrono::nanoseconds interval{std::chrono::milliseconds(10)};
  std::chrono::nanoseconds window{std::chrono::seconds(30)};
  SpoolLimits spool_limits;
};

class Collector {
 public:
  // Finds the devices and starts their window samplers.
  explicit Collector(CollectorOptions options);

  std::size_t device_count() const noexcept { return devices_.size(); }
  // Everything but the exporter's request counters, which the caller fills in.
  Snapshot collect();

 private:
  struct Identity {
    int ordinal = 0;
    std::string uuid;
    std::string name;
  };
  void collect_traces(Snapshot& snapshot);

  CollectorOptions options_;
  std::vector<Identity> devices_;
  std::unique_ptr<WindowPeak> peaks_;
  std::uint64_t scrapes_ = 0;
};

// The command name of a process (/proc/PID/comm), empty when it cannot be read.
std::string process_name(unsigned pid);
// Whether the process exists (in this pid namespace).
bool process_alive(unsigned pid);
// Removes temporary files that publishers died leaving behind.
void remove_abandoned_temporaries(const std::filesystem::path& spool);

}  // namespace gpumem::serve
