/**
 * @file gpumem/peak.hpp
 * @brief Exact, concurrent, resettable peak counters.
 *
 * Any number of counters may be alive at once, overlapping in any order, each started, reset and
 * read from any thread (one counter's reset() must not race its own read(), as with any object
 * that changes). All counters of a device and source share one event stream; the cost of an
 * allocation event does not depend on how many counters are alive. Every figure is in bytes,
 * and every reading says which quantity it is, which source measured it and what it covers.
 *
 * Nothing here throws because a GPU, a driver or CUPTI is missing or failing: a counter that
 * cannot measure reads zeros (Source::none), and gpumem::last_diagnostic() says why. Functions
 * not marked noexcept may throw std::bad_alloc.
 *
 * @code
 * #include <gpumem/peak.hpp>
 *
 * gpumem::PeakCounter step(0);  // exact where CUPTI works, sampled otherwise
 * for (auto& batch : batches) {
 *   train(batch);
 *   const gpumem::PeakReading r = step.read();
 *   std::printf("peak %lld bytes above the start (%s)
",
 *               (long long)(r.peak_bytes - r.start_bytes), gpumem::describe(r).c_str());
 *   step.reset();  // the next batch's peak starts now
 * }
 * @endcode
 */
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
#include "gpumem/reading.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/**
 * @return the covered parts in words, e.g. "allocations, VMM, pools, graphs, context and
 * modules"; "nothing" for 0
 */
std::string describe_coverage(std::uint32_t covers);

/**
 * @return one line saying what a reading is and what it may miss, e.g. "process footprint, exact
 * (CUDA events and NVML's per-process figure): allocations, VMM, pools, graphs, context and
 * modules"
 */
std::string describe(const PeakReading& reading);

/**
 * @brief The peak of one device's memory over a window that starts at construction and at each
 * reset(), as one source measures it.
 *
 * While at least one exact counter is alive gpumem holds the process's CUPTI subscription;
 * while a sampled one is, one sampler thread per device runs. Both go with the last counter
 * that needs them. Move-only; a moved-from counter reads zeros with Source::none.
 */
class PeakCounter {
 public:
  /**
   * @brief Starts counting at once.
   * @param device a CUDA ordinal, or current_device (resolved now)
   * @param source automatic picks the best that works for this process; exact where CUPTI is
   * unavailable falls back to sampled, and sampled without NVML to none (see source())
   * @throws std::bad_alloc when the counter cannot be allocated; never for a missing GPU
   */
  explicit PeakCounter(int device = current_device, Source source = Source::automatic);
  /// Stops counting; releases the CUPTI subscription or sampler thread if it was the last user.
  /**
   * @brief Starts counting at once, keeping the blocks live at the peak when asked.
   * @param attribution Attribution::on (or GPUMEM_ATTRIBUTE=1 in the environment) with the exact
   * source: the counter also keeps the blocks live at its peak, with their allocating stacks
   * (attribution.hpp). Another source has no blocks to keep: the counter then does not attribute.
   * @throws std::bad_alloc when the counter cannot be allocated; never for a missing GPU
   */
  PeakCounter(int device, Source source, Attribution attribution);
  ~PeakCounter();
  PeakCounter(PeakCounter&&) noexcept;
  PeakCounter& operator=(PeakCounter&&) noexcept;
  PeakCounter(const PeakCounter&) = delete;
  PeakCounter& operator=(const PeakCounter&) = delete;

  /// Starts a new window: start and peak become the current level. Other counters keep theirs.
  void reset();
  /// @return the window's start, current level and peak (bytes); changes nothing
  PeakReading read() const;
  /// @return the source actually measuring (never automatic); none when nothing can measure
  Source source() const noexcept;
  /// @return the CUDA ordinal counted
  int device() const noexcept;
  bool attributing() const noexcept;
  // The blocks live when this counter's level last reached its peak (since its start or last
  // reset), symbolized; nullopt when it does not attribute.
  std::optional<AttributionSnapshot> peak_snapshot() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/**
 * @brief The reported source: a custom allocator or framework reports its device allocations
 * (bytes), and every counter of Source::reported on that device sees them, as RMM's
 * statistics adaptor counts.
 *
 * Thread-safe, lock-free and cheap given an ordinal; current_device costs a driver query per
 * call. An ordinal outside [0, 64) is ignored. A deallocation may report a block allocated
 * before any counter started: the level then falls below a counter's start.
 *
 * @code
 * void* MyPool::allocate(std::size_t bytes) {
 *   void* block = upstream_.allocate(bytes);
 *   gpumem::report_allocation(device_, bytes);
 *   return block;
 * }
 * void MyPool::deallocate(void* block, std::size_t bytes) {
 *   upstream_.deallocate(block, bytes);
 *   gpumem::report_deallocation(device_, bytes);
 * }
 * @endcode
 */
void report_allocation(int device, std::size_t bytes) noexcept;
/// @copydoc report_allocation
void report_deallocation(int device, std::size_t bytes) noexcept;

/**
 * @brief Sets the sampled source's interval (default 500 µs; 0 or less restores the default;
 * intervals below 10 µs are raised to 10 µs). Thread-safe: takes effect for samplers started
 * afterwards and for running ones at their next sample.
 */
void set_sampling_interval(std::chrono::nanoseconds interval);
/// @return the sampled source's interval now
std::chrono::nanoseconds sampling_interval() noexcept;

/**
 * @return why the exact source is unavailable right now ("CUPTI is held by another tool (…)");
 * empty when it works or was never tried. Thread-safe.
 */
std::string exact_source_status();

}  // namespace gpumem

#pragma GCC visibility pop
