// Who held each device over a `gpumem run`: NVML's process list at every sample the monitor
// took, so that an out-of-memory failure can be told which other processes held the device at
// that moment. Bounded: a list equal to the one before only extends that reading, and past
// `max_readings` on one device every other reading goes (the history thins evenly over the whole
// run, its first and newest readings kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "gpumem/device.hpp"

namespace gpumem::run {

// One list NVML gave, unchanged from `first_ns` to `last_ns` (the monotonic clock).
struct HolderReading {
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
  std::vector<ProcessMemory> listed;
};

// The list NVML showed around a moment, and how long before it that list was read: 0 when the
// same list was read before and after the moment; negative when the only reading came after.
struct HoldersAt {
  const HolderReading* reading = nullptr;
  double age_s = 0;
};

class HolderHistory {
 public:
  explicit HolderHistory(std::size_t max_readings = 32768);

  // A list read on `device` (a CUDA ordinal) at `time_ns`; times must not go back.
  void add(int device, std::int64_t time_ns, const std::vector<ProcessMemory>& listed);
  // The newest list of `device` still stood at `time_ns` (a tick that found nothing changed
  // since it was read, docs/peaks.md): it extends that reading, as the same list read again
  // would; nothing when `device` was never read.
  void still(int device, std::int64_t time_ns);
  // The newest reading at or before `time_ns`, else the first after it; nullopt when `device`
  // was never read.
  std::optional<HoldersAt> at(int device, std::int64_t time_ns) const;
  std::size_t readings(int device) const;

 private:
  std::size_t max_readings_;
  std::map<int, std::vector<HolderReading>> devices_;
};

}  // namespace gpumem::run
