// Exact, concurrent, resettable peak counters.
//
// Any number of counters may be alive at once, overlapping in any order, each started, reset and
// read from any thread (one counter's reset() must not race its own read(), as with any object
// that changes). All counters of a device and source share one event stream; the cost of
// an allocation event does not depend on how many counters are alive.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "gpumem/memory.hpp"

namespace gpumem {

// Where a counter's events come from, best first.
enum class Source : std::uint8_t {
  automatic,  // exact where CUPTI works, sampled otherwise
  exact,      // CUPTI callbacks on every device allocation and free of this process
  reported,   // what an allocator reports through report_allocation / report_deallocation
  sampled,    // a native sampler thread reading the device's used memory from NVML
  none,       // nothing could measure (no GPU): every reading stays at zero
};
std::string_view to_string(Source source) noexcept;

// Bytes, in the device's used-memory space: start is the level when the counter started or was
// last reset, peak the highest level since then (>= start and >= current).
struct PeakReading {
  int device = 0;
  Source source = Source::none;
  std::int64_t start_bytes = 0;
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
};

class PeakCounter {
 public:
  // Starts counting at once. `source` automatic picks the best that works for this process;
  // requesting exact where CUPTI is unavailable falls back to sampled (see source()).
  explicit PeakCounter(int device = current_device, Source source = Source::automatic);
  ~PeakCounter();
  PeakCounter(PeakCounter&&) noexcept;
  PeakCounter& operator=(PeakCounter&&) noexcept;
  PeakCounter(const PeakCounter&) = delete;
  PeakCounter& operator=(const PeakCounter&) = delete;

  void reset();  // start and peak become the current level
  PeakReading read() const;
  Source source() const noexcept;
  int device() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The explicit source: a custom allocator or framework reports its device allocations, and
// every counter of Source::reported on that device sees them. Cheap and lock-free given an
// ordinal; current_device costs a driver query per call.
void report_allocation(int device, std::size_t bytes) noexcept;
void report_deallocation(int device, std::size_t bytes) noexcept;

// The sampled source's interval (default 500 µs). Takes effect for samplers started afterwards
// and for running ones at their next sample.
void set_sampling_interval(std::chrono::nanoseconds interval);
std::chrono::nanoseconds sampling_interval() noexcept;

// Why the exact source is unavailable right now ("CUPTI is held by another tool (…)"), empty
// when it works or was never tried.
std::string exact_source_status();

}  // namespace gpumem
