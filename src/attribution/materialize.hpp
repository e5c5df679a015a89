// From what the recorder holds (blocks with stack ids) to an AttributionSnapshot (stacks
// symbolized, gpumem's and CUDA's frames left out).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/block_table.hpp"
#include "gpumem/attribution.hpp"

namespace gpumem::attribution {

struct RawFailure {
  std::uint64_t bytes = 0;
  std::uint8_t kind = 0;
  std::uint32_t stack = 0;
  std::string error;
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

struct RawMoment {
  std::string what;  // "peak", "oom"
  std::optional<std::string> scope;
  int device = 0;
  std::int64_t time_ns = 0;  // the monotonic clock (support::monotonic_ns)
  std::int64_t level = 0;
  bool attributed = true;
  std::vector<BlockTable::Entry> blocks;
  std::optional<RawFailure> failure;
  std::vector<OtherProcess> other_processes;
  bool other_processes_read = false;  // NVML was read at the moment (for `oom`)
  SnapshotDevice device_identity;
};

AttributionSnapshot materialize(const RawMoment& moment);

// Seconds from the start of this process (as the monotonic clock saw the library load) to
// `time_ns`.
double seconds_since_start(std::int64_t time_ns) noexcept;

// The last out-of-memory snapshot of the process.
void set_last_oom(AttributionSnapshot snapshot);

}  // namespace gpumem::attribution
