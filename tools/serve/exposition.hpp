// What one scrape shows, and its rendering in the Prometheus text exposition format (0.0.4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/memory.hpp"
#include "gpumem/publish.hpp"

namespace gpumem::serve {

struct DeviceSample {
  int gpu = 0;  // CUDA ordinal, as the exporter sees it
  std::string uuid;
  std::string name;
  bool up = false;
  GPUMemoryBytes memory;                    // meaningful when up
  std::optional<std::int64_t> window_peak;  // used bytes, highest over the window
};

// Where a process runs, read from its cgroup (and the kubelet where it answers); empty fields
// are left out of the labels.
struct ContainerIdentity {
  std::string pod_uid;
  std::string container_id;
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string container_pid;  // the pid inside the process's own pid namespace, when nested
};

struct ProcessSample {
  int gpu = 0;
  std::string uuid;
  unsigned pid = 0;
  std::string process;  // the command name, empty where it cannot be read
  std::uint64_t used_bytes = 0;
  ContainerIdentity container;
};

// The exporter's own figures known when a collection ends.
struct CollectionSample {
  double interval_seconds = 0;
  double window_seconds = 0;
  std::uint64_t spool_malformed = 0;
  std::uint64_t spool_unreadable = 0;
  std::uint64_t spool_dropped = 0;
};

// The exporter's own figures known when a scrape is answered.
struct ServingSample {
  std::uint64_t scrapes = 0;
  std::uint64_t collections = 0;
  double collection_age_seconds = 0;
  double collection_duration_seconds = 0;
  std::uint64_t rejected_connections = 0;
  std::uint64_t evicted_connections = 0;
  std::uint64_t bad_requests = 0;
  std::uint64_t unauthorized_requests = 0;
};

struct Snapshot {
  std::string host;
  std::vector<DeviceSample> devices;
  std::vector<ProcessSample> processes;
  std::vector<PublishedTrace> traces;
  CollectionSample exporter;
};

std::string render_exposition(const Snapshot& snapshot, const ServingSample& serving = {});

// A label value as valid UTF-8 (invalid bytes replaced by U+FFFD), escaped as the format
// requires (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);

}  // namespace gpumem::serve
