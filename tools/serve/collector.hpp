// Builds a Snapshot from the devices, the window peaks, the processes' containers and the spool
// directories. Runs on the collection loop's thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "container_identity.hpp"
#include "exposition.hpp"
#include "gpumem/internal/window_peak.hpp"
#include "process_labels.hpp"

namespace gpumem::serve {

struct CollectorOptions {
  std::string host;
  std::vector<std::filesystem::path> spools;
  std::chrono::seconds retention{300};  // keep an exited process's results this long
  std::chrono::nanoseconds interval{std::chrono::milliseconds(10)};
  std::chrono::nanoseconds window{std::chrono::seconds(30)};
  detail::SpoolLimits spool_limits;
  std::filesystem::path proc = "/proc";
  std::filesystem::path containers;  // the kubelet's /var/log/containers, empty for none
};

class Collector {
 public:
  // Finds the devices and starts their window samplers.
  explicit Collector(CollectorOptions options);

  std::size_t device_count() const noexcept { return devices_.size(); }
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
  std::shared_ptr<WindowPeak> peaks_;  // shared with the snapshots, which scrapes read it through
  ContainerDirectory containers_;
  ProcessLabelCache labels_;   // reads /proc only for new processes and labels 10 s old
  std::string pid_namespace_;  // the exporter's own, "pid:[inode]"
  std::map<std::filesystem::path, std::string> refusals_;  // logged once per change
};

}  // namespace gpumem::serve
