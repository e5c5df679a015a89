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
#include <optional>
#include <string>
#include <string_view>

#include "gpumem/attribution.hpp"
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

// What a reading's figures measure.
enum class Quantity : std::uint8_t {
  // The device memory the driver holds for this process: allocations, VMM physical memory from
  // creation until released and unmapped, stream-ordered pools' reservations (not only their live
  // blocks), graph-memory reservations, and the CUDA context with its modules. What a GPU must
  // have free for the program. Measured by the exact source.
  process_footprint,
  // The device's used memory, NVML's total - free: every process, and the driver's own
  // reservation. The figure fastai.utils.mem traced. Measured by the sampled source.
  device_used,
  // What an allocator reported through report_allocation / report_deallocation.
  reported,
  none,  // nothing measured
};
std::string_view to_string(Quantity quantity) noexcept;

// Which parts of a process footprint a reading accounts for (bits of PeakReading::covers).
namespace coverage {
inline constexpr std::uint32_t allocations = 1u << 0;  // cuMemAlloc*, cudaMalloc*
inline constexpr std::uint32_t vmm = 1u << 1;          // cuMemCreate'd physical memory
inline constexpr std::uint32_t pools = 1u << 2;        // stream-ordered pools' reservations
inline constexpr std::uint32_t graphs = 1u << 3;       // graph-memory reservations
inline constexpr std::uint32_t context = 1u << 4;      // context, modules, driver rounding (NVML)
inline constexpr std::uint32_t other_processes = 1u << 5;  // device_used: everyone's memory
inline constexpr std::uint32_t footprint =
    allocations | vmm | pools | graphs | context;  // all of a process footprint
}  // namespace coverage
// "allocations, VMM, pools, graphs, context and modules"
std::string describe_coverage(std::uint32_t covers);

// Bytes. start is the level when the counter started or was last reset, peak the highest level
// since then (>= start and >= current), all of `quantity`.
struct PeakReading {
  int device = 0;
  Source source = Source::none;
  Quantity quantity = Quantity::none;
  std::uint32_t covers = 0;  // coverage bits
  std::int64_t start_bytes = 0;
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
  // The device's used memory (NVML's total - free; the driver's cuMemGetInfo without NVML) when
  // the counter started and now, and its peak over the window: the highest reading taken in it,
  // or the start plus this counter's own rise, whichever is higher. 0 where nothing could read it.
  std::int64_t device_used_start_bytes = 0;
  std::int64_t device_used_current_bytes = 0;
  std::int64_t device_used_peak_bytes = 0;
};
// One line saying what a reading is and what it may miss, e.g. "process footprint, exact (CUDA
// events and NVML's per-process figure): allocations, VMM, pools, graphs, context and modules".
std::string describe(const PeakReading& reading);

class PeakCounter {
 public:
  // Starts counting at once. `source` automatic picks the best that works for this process;
  // requesting exact where CUPTI is unavailable falls back to sampled (see source()).
  explicit PeakCounter(int device = current_device, Source source = Source::automatic);
  // Attribution::on (or GPUMEM_ATTRIBUTE=1 in the environment) with the exact source: the
  // counter also keeps the blocks live at its peak, with their allocating stacks (attribution.hpp).
  // Another source has no blocks to keep: the counter then does not attribute.
  PeakCounter(int device, Source source, Attribution attribution);
  ~PeakCounter();
  PeakCounter(PeakCounter&&) noexcept;
  PeakCounter& operator=(PeakCounter&&) noexcept;
  PeakCounter(const PeakCounter&) = delete;
  PeakCounter& operator=(const PeakCounter&) = delete;

  void reset();  // start and peak become the current level
  PeakReading read() const;
  Source source() const noexcept;
  int device() const noexcept;
  bool attributing() const noexcept;
  // The blocks live when this counter's level last reached its peak (since its start or last
  // reset), symbolized; nullopt when it does not attribute.
  std::optional<AttributionSnapshot> peak_snapshot() const;

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
