/**
 * @file gpumem/trace.hpp
 * @brief GPUMemTrace: fastai.utils.mem's tracer with its whole API and its report format, fed by
 * exact peaks; also the context-manager form (TraceScope) and the decorator forms
 * (GPUMEM_TRACE_FUNCTION, traced).
 *
 * Figures in MB are fastai.utils.mem's (2^20 bytes, truncated); data_bytes() gives the bytes and
 * says which quantity they are. A trace is one object: use it from one thread at a time (any
 * number of traces may run at once, on any threads, overlapping in any order). Nothing throws
 * because a GPU or driver is missing: such a trace reports zeros. Functions not marked noexcept
 * may throw std::bad_alloc, and what the report sink throws.
 *
 * @code
 * #include <gpumem/trace.hpp>
 *
 * void step(Model& model, const Batch& batch) {
 *   GPUMEM_TRACE_FUNCTION();  // reports "(step: exit)" when step returns
 *   model.forward(batch);
 * }
 *
 * int main() {
 *   gpumem::GPUMemTrace trace;  // starts now
 *   Model model = load_model();
 *   trace.report("load");       // △Used Peaked MB:  2,304    512 (load)
 *   {
 *     gpumem::TraceScope scope{"first step"};  // reports "(first step: exit)" when it ends
 *     step(model, first_batch());
 *   }
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpumem/peak.hpp"
#include "gpumem/reading.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/// Receives each report line, without a trailing newline; called on the reporting thread.
using ReportSink = std::function<void(std::string_view line)>;
/// @return a sink that writes each line and a newline to stdout, and flushes
ReportSink stdout_sink();
/// @return a sink that writes each line and a newline to `out`, and flushes; `out` must outlive it
ReportSink ostream_sink(std::ostream& out);

/**
 * @brief The report line, byte for byte as fastai.utils.mem prints it: "△Used Peaked MB: ", two
 * right-aligned width-6 fields with thousands separators (`f"{x:6,.0f}"`), then " (ctx: subctx)",
 * " (ctx)", " (subctx)" or nothing.
 * @return e.g. "△Used Peaked MB:  1,024     64 (train: epoch 1)"
 */
std::string format_report(std::int64_t delta_used_mb, std::int64_t delta_peaked_mb,
                          const std::optional<std::string>& ctx,
                          const std::optional<std::string>& subctx);

/**
 * @brief fastai.utils.mem's arithmetic, in any unit: used = end − start; peaked = max(0, peak −
 * start), less `used` when that is positive, and never negative.
 * @return (delta_used, delta_peaked)
 */
std::pair<std::int64_t, std::int64_t> trace_deltas(std::int64_t start, std::int64_t end,
                                                   std::int64_t peak) noexcept;

/// How a trace measures and reports; GPUMemTrace(TraceOptions{.silent = true, .ctx = "train"}).
struct TraceOptions {
  bool silent = false;             ///< report() prints nothing
  std::optional<std::string> ctx;  ///< named in every report line
  bool on_exit_report = true;      ///< TraceScope reports when it ends
  int device = current_device;     ///< CUDA ordinal traced (resolved at start)
  Source source = Source::automatic;
  /// Run the cache-release hooks before measuring endpoints, as fastai.utils.mem did.
  bool no_cache = true;
  /// Keep the blocks live at the peak (peak_snapshot(); attribution.hpp).
  bool attribute = false;
  ReportSink sink;  ///< where report lines go; stdout when empty
};

/**
 * @brief fastai.utils.mem's GPUMemTrace: traces from construction, reports the rise and the
 * peak above it in MB.
 *
 * Destroying a trace reports nothing and releases no cache (fastai.utils.mem's `__del__` emptied
 * the cache; gpumem's destructor has no side effects).
 */
class GPUMemTrace {
 public:
  /// fastai.utils.mem's signature; starts tracing at once.
  explicit GPUMemTrace(bool silent = false, std::optional<std::string> ctx = std::nullopt,
                       bool on_exit_report = true);
  /// Starts tracing at once with `options`.
  explicit GPUMemTrace(TraceOptions options);
  ~GPUMemTrace();
  /// A moved-from trace may only be destroyed or assigned to.
  GPUMemTrace(GPUMemTrace&&) noexcept;
  GPUMemTrace& operator=(GPUMemTrace&&) noexcept;

  /// (Re)starts tracing: re-baselines start and peak (after the cache-release hooks if no_cache).
  void start();
  /// Freezes the data; a stopped trace holds no CUPTI subscription and no sampler thread.
  void stop();
  /// Re-baselines start and peak and keeps running (a stopped trace re-baselines on its end).
  void reset();
  /// @return (delta_used, delta_peaked) in MB, from readings each truncated to MB first
  std::pair<std::int64_t, std::int64_t> data();
  /// @return the data in bytes, with what it measures
  TraceBytes data_bytes();
  /// Sends format_report(data(), ctx, subctx) to the sink, unless silent.
  void report(std::optional<std::string> subctx = std::nullopt);
  /// report(subctx), then reset().
  void report_n_reset(std::optional<std::string> subctx = std::nullopt);
  void silent(bool silent = true) noexcept;
  bool is_silent() const noexcept;
  /// @return false between stop() and the next start()
  bool is_running() const noexcept;
  bool on_exit_report() const noexcept;
  const std::optional<std::string>& ctx() const noexcept;
  /// @return the source measuring (or that measured, once stopped)
  Source source() const noexcept;
  /// @return the report line without context: "△Used Peaked MB:      0      0"
  std::string repr();
  /**
   * @return the blocks live at the peak with their stacks, scoped by ctx (the one at stop() once
   * stopped); std::nullopt unless the trace attributes (TraceOptions::attribute, exact source)
   */
  std::optional<AttributionSnapshot> peak_snapshot();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/**
 * @brief fastai.utils.mem's `with gpu_mem_trace(...)`: traces from construction; on leaving the
 * scope, normally or by an exception, stops and reports with subctx "exit" (unless
 * on_exit_report is false). A sink that throws there is ignored: a destructor must not throw.
 *
 * @code
 * {
 *   gpumem::TraceScope scope{"epoch"};
 *   train_one_epoch();
 * }  // prints "△Used Peaked MB:    118  1,502 (epoch: exit)"
 * @endcode
 */
class TraceScope {
 public:
  explicit TraceScope(std::optional<std::string> ctx = std::nullopt, bool on_exit_report = true,
                      bool silent = false);
  explicit TraceScope(TraceOptions options);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  /// The trace inside, to report or read before the scope ends.
  GPUMemTrace& trace() noexcept { return trace_; }

 private:
  GPUMemTrace trace_;
};

/**
 * @brief Names a function as fastai.utils.mem's decorator does (its `__qualname__`).
 * @param signature a compiler's function signature (`__PRETTY_FUNCTION__`: std::source_location
 * is missing from clang 14 with libstdc++ 12)
 * @return "Class::method" or "function"
 */
std::string function_context(std::string_view signature);

/**
 * @brief The decorator form for any callable: `traced("ctx", f)(args…)` runs f inside a
 * TraceScope{ctx} and returns what f returns.
 *
 * @code
 * auto train = gpumem::traced("train", [&](int epochs) { return fit(model, epochs); });
 * const double loss = train(3);  // prints "… (train: exit)"
 * @endcode
 */
template <class F>
auto traced(std::string ctx, F&& function) {
  return [ctx = std::move(ctx),
          function = std::forward<F>(function)](auto&&... args) mutable -> decltype(auto) {
    TraceScope scope{ctx};
    return function(std::forward<decltype(args)>(args)...);
  };
}

}  // namespace gpumem

/// The decorator form for a function body: put it first in the body; reports as
/// "(Class::method: exit)" when the function returns or throws.
#define GPUMEM_TRACE_FUNCTION()                       \
  ::gpumem::TraceScope gpumem_trace_function_scope_ { \
    ::gpumem::function_context(__PRETTY_FUNCTION__)   \
  }

#pragma GCC visibility pop
