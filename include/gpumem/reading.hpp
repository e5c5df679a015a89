/**
 * @file gpumem/reading.hpp
 * @brief What a reading holds: the figures of a peak counter (PeakReading) and of a trace
 * (TraceBytes), what measured them (Source) and what they measure (Quantity, coverage).
 *
 * Declarations only: plain structs and enumerations, and their names as text, with nothing
 * behind them in the library, so that whoever carries a reading (a trace, the spool that
 * publishes it, the exporter that reads it back) needs none of the rooms that take one.
 * gpumem/peak.hpp and gpumem/trace.hpp include it. Nothing here throws; every figure is in
 * bytes.
 *
 * @code
 * #include <gpumem/reading.hpp>
 *
 * std::string line(const gpumem::TraceBytes& bytes) {
 *   return std::string{gpumem::to_string(bytes.source)} + ": " + std::to_string(bytes.peak);
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <string_view>

namespace gpumem {

/// Where a counter's events come from, best first.
enum class Source : std::uint8_t {
  automatic,  ///< exact where CUPTI works, sampled otherwise
  exact,      ///< CUPTI callbacks on every device allocation and free of this process
  reported,   ///< what an allocator reports through report_allocation / report_deallocation
  sampled,    ///< a native sampler thread reading the device's used memory from NVML
  none,       ///< nothing could measure (no GPU): every reading stays at zero
};
/// @return "automatic", "exact", "reported", "sampled" or "none" (static text)
constexpr std::string_view to_string(Source source) noexcept {
  switch (source) {
    case Source::automatic:
      return "automatic";
    case Source::exact:
      return "exact";
    case Source::reported:
      return "reported";
    case Source::sampled:
      return "sampled";
    case Source::none:
      return "none";
  }
  return "unknown";
}

/// What a reading's figures measure.
enum class Quantity : std::uint8_t {
  /// The device memory the driver holds for this process: allocations, VMM physical memory from
  /// creation until released and unmapped, stream-ordered pools' reservations (not only their live
  /// blocks), graph-memory reservations, and the CUDA context with its modules. What a GPU must
  /// have free for the program. Measured by the exact source.
  process_footprint,
  /// The device's used memory, NVML's total - free: every process, and the driver's own
  /// reservation. The figure fastai.utils.mem traced. Measured by the sampled source.
  device_used,
  /// What an allocator reported through report_allocation / report_deallocation.
  reported,
  none,  ///< nothing measured
};
/// @return "process footprint", "device used", "reported by the allocator" or "none" (static text)
constexpr std::string_view to_string(Quantity quantity) noexcept {
  switch (quantity) {
    case Quantity::process_footprint:
      return "process footprint";
    case Quantity::device_used:
      return "device used";
    case Quantity::reported:
      return "reported by the allocator";
    case Quantity::none:
      return "none";
  }
  return "unknown";
}

/// Which parts of a process footprint a reading accounts for (bits of PeakReading::covers).
namespace coverage {
inline constexpr std::uint32_t allocations = 1u << 0;  ///< cuMemAlloc*, cudaMalloc*
inline constexpr std::uint32_t vmm = 1u << 1;          ///< cuMemCreate'd physical memory
inline constexpr std::uint32_t pools = 1u << 2;        ///< stream-ordered pools' reservations
inline constexpr std::uint32_t graphs = 1u << 3;       ///< graph-memory reservations
inline constexpr std::uint32_t context = 1u << 4;      ///< context, modules, driver rounding (NVML)
inline constexpr std::uint32_t other_processes = 1u << 5;  ///< device_used: everyone's memory
inline constexpr std::uint32_t footprint =
    allocations | vmm | pools | graphs | context;  ///< all of a process footprint
}  // namespace coverage
/**
 * @brief One reading of a counter, in bytes.
 *
 * `start_bytes` is the level when the counter started or was last reset, `peak_bytes` the
 * highest level since then (>= start and >= current), all of `quantity`, measured by `source`,
 * covering the `covers` bits. A counter that cannot measure reads all zeros with Source::none.
 */
struct PeakReading {
  int device = 0;                      ///< CUDA ordinal
  Source source = Source::none;        ///< what measured it (never automatic)
  Quantity quantity = Quantity::none;  ///< what the three figures below are
  std::uint32_t covers = 0;            ///< coverage bits
  std::int64_t start_bytes = 0;        ///< the level at the start or last reset
  std::int64_t current_bytes = 0;      ///< the level now
  std::int64_t peak_bytes = 0;         ///< the highest level since the start
  /// The device's used memory (NVML's total - free; the driver's cuMemGetInfo without NVML) when
  /// the counter started and now, and its peak over the window: the highest reading taken in it,
  /// or the start plus this counter's own rise, whichever is higher. 0 where nothing could read
  /// it. Beside every reading, whatever its source.
  std::int64_t device_used_start_bytes = 0;
  std::int64_t device_used_current_bytes = 0;
  std::int64_t device_used_peak_bytes = 0;
};

/**
 * @brief A trace's data in bytes.
 *
 * start, end and peak are of `quantity`: the process footprint with the exact source (the
 * default where CUPTI works), the device's used memory with the sampled one; `reading` says
 * which and what it covers (describe(reading) in words), with the device-used figures beside it.
 */
struct TraceBytes {
  Source source = Source::none;        ///< what measured it
  int device = 0;                      ///< CUDA ordinal
  std::int64_t start = 0;              ///< bytes at start (or last reset)
  std::int64_t end = 0;                ///< bytes now, or at stop()
  std::int64_t peak = 0;               ///< highest bytes in between
  std::int64_t delta_used = 0;         ///< bytes: trace_deltas(start, end, peak).first
  std::int64_t delta_peaked = 0;       ///< bytes: trace_deltas(start, end, peak).second
  Quantity quantity = Quantity::none;  ///< what start, end and peak are
  PeakReading reading;                 ///< the whole reading behind these figures
};

}  // namespace gpumem
