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

struct ProcessSample {
  int gpu = 0;
  std::string uuid;
  unsigned pid = 0;
  std::string process;  // the command name, empty where it cannot be read
  std::uint64_t used_bytes = 0;
};

struct ExporterSample {
  double interval_seconds = 0;
  double window_seconds = 0;
  std::uint64_t scrapes = 0;
  std::uint64_t rejected_connections = 0;
  std::uint64_t bad_requests = 0;
  std::uint64_t spool_malformed = 0;
  std::uint64_t spool_skipped = 0;
};

struct Snapshot {
  std::string host;
  std::vector<DeviceSample> devices;
  std::vector<ProcessSample> processes;
  std::vector<PublishedTrace> traces;
  ExporterSample exporter;
};

std::string render_exposition(const Snapshot& snapshot);

// A label value escaped as the format requires (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);

}  // namespace gpumem::serve
