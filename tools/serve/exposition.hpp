// What one scrape shows, and its rendering in the Prometheus text exposition format (0.0.4).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/internal/spool.hpp"
#include "gpumem/internal/window_peak.hpp"
#include "gpumem/memory.hpp"

namespace gpumem::serve {

using detail::WindowPeak;

struct DeviceSample {
  int gpu = 0;  // CUDA ordinal, as the exporter sees it
  std::string uuid;
  std::string name;
  bool up = false;
  GPUMemoryBytes memory;                    // meaningful when up
  std::optional<std::int64_t> window_peak;  // used bytes, highest over the window, when collected
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
  std::uint64_t spool_refused = 0;  // spool directories not read (spool_directory_refusal)
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
  std::uint64_t response_bytes = 0;
  // The window peaks read when the scrape is answered (Snapshot::live_peaks), by device index;
  // where absent, a device shows the peak its collection read.
  std::vector<std::optional<std::int64_t>> window_peaks;
};

struct Snapshot {
  std::string host;
  std::vector<DeviceSample> devices;
  std::vector<ProcessSample> processes;
  std::vector<detail::PublishedTrace> traces;  // one per series: keep_newest_per_series
  // The exporter's own pid namespace ("pid:[inode]"): traces published from another one (a
  // container) carry theirs as a label, so that equal pids of two containers stay apart.
  std::string pid_namespace;
  CollectionSample exporter;
  // The window peaks, sampled on after the collection ends: a scrape reads them again, so that a
  // spike since the collection is in the very next scrape (null where not collected from devices).
  std::shared_ptr<const WindowPeak> live_peaks;
};

// The pid_namespace label of a trace: its publisher's namespace where it is not `own`, else empty
// (left out).
std::string_view trace_pid_namespace_label(const detail::PublishedTrace& trace,
                                           std::string_view own);
// Keeps one trace per series (scope, pid and pid_namespace label, as the timestamp family has
// them): the newest, the first file name on a tie, so every scrape shows the same one. Sorts the
// traces by scope, pid and namespace; returns how many were left out.
std::size_t keep_newest_per_series(std::vector<detail::PublishedTrace>& traces,
                                   std::string_view own_pid_namespace);

std::string render_exposition(const Snapshot& snapshot, const ServingSample& serving = {});

// A label value as valid UTF-8 (invalid bytes replaced by U+FFFD), escaped as the format
// requires (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);

}  // namespace gpumem::serve
