// GPUMemTrace: fastai.utils.mem's tracer with its whole API and report format, fed by exact
// peaks. Also the context-manager form (TraceScope) and the decorator forms
// (GPUMEM_TRACE_FUNCTION, traced).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpumem/peak.hpp"

namespace gpumem {

// Receives each report line, without a trailing newline.
using ReportSink = std::function<void(std::string_view line)>;
ReportSink stdout_sink();
ReportSink ostream_sink(std::ostream& out);

// "△Used Peaked MB: " then two right-aligned width-6 fields with thousands separators, then
// " (ctx: subctx)", " (ctx)", " (subctx)" or nothing; exactly as the seed prints it.
std::string format_report(std::int64_t delta_used_mb, std::int64_t delta_peaked_mb,
                          const std::optional<std::string>& ctx,
                          const std::optional<std::string>& subctx);

// The seed's arithmetic: used = end - start; peaked = max(0, peak - start), less `used` when
// that is positive, and never negative.
std::pair<std::int64_t, std::int64_t> trace_deltas(std::int64_t start, std::int64_t end,
                                                   std::int64_t peak) noexcept;

// A trace's data in bytes. start/end/peak are of `quantity`: the process footprint with the exact
// source (the default where CUPTI works), the device's used memory with the sampled one;
// `reading` says which and what it covers (describe(reading) in words), with the device-used
// figures beside it.
struct TraceBytes {
  Source source = Source::none;
  int device = 0;
  std::int64_t start = 0;  // bytes at start (or last reset)
  std::int64_t end = 0;    // bytes now, or at stop()
  std::int64_t peak = 0;   // highest bytes in between
  std::int64_t delta_used = 0;
  std::int64_t delta_peaked = 0;
  Quantity quantity = Quantity::none;
  PeakReading reading;  // the whole reading behind these figures
};

struct TraceOptions {
  bool silent = false;
  std::optional<std::string> ctx;
  bool on_exit_report = true;
  int device = current_device;
  Source source = Source::automatic;
  bool no_cache = true;    // run the cache-release hooks before measuring endpoints (the seed's)
  bool attribute = false;  // keep the blocks live at the peak (peak_snapshot(); attribution.hpp)
  ReportSink sink;         // default: stdout
};

class GPUMemTrace {
 public:
  explicit GPUMemTrace(bool silent = false, std::optional<std::string> ctx = std::nullopt,
                       bool on_exit_report = true);
  explicit GPUMemTrace(TraceOptions options);
  ~GPUMemTrace();
  // A moved-from trace may only be destroyed or assigned to.
  GPUMemTrace(GPUMemTrace&&) noexcept;
  GPUMemTrace& operator=(GPUMemTrace&&) noexcept;

  void start();                                  // (re)start tracing: re-baselines start and peak
  void stop();                                   // freeze the data
  void reset();                                  // re-baseline start and peak, keep running
  std::pair<std::int64_t, std::int64_t> data();  // (delta_used, delta_peaked) in MB
  TraceBytes data_bytes();
  void report(std::optional<std::string> subctx = std::nullopt);
  void report_n_reset(std::optional<std::string> subctx = std::nullopt);
  void silent(bool silent = true) noexcept;
  bool is_silent() const noexcept;
  bool is_running() const noexcept;
  bool on_exit_report() const noexcept;
  const std::optional<std::string>& ctx() const noexcept;
  Source source() const noexcept;
  std::string repr();  // "△Used Peaked MB:      0      0"
  // The blocks live at the peak with their stacks, scoped by ctx; the one at stop() once
  // stopped; nullopt unless the trace attributes (TraceOptions::attribute, exact source).
  std::optional<AttributionSnapshot> peak_snapshot();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The context-manager form: traces from construction; on leaving the scope, normally or by an
// exception, stops and reports with subctx "exit" (unless on_exit_report is false).
class TraceScope {
 public:
  explicit TraceScope(std::optional<std::string> ctx = std::nullopt, bool on_exit_report = true,
                      bool silent = false);
  explicit TraceScope(TraceOptions options);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  GPUMemTrace& trace() noexcept { return trace_; }

 private:
  GPUMemTrace trace_;
};

// "Class::method" or "function" from a compiler's function signature (__PRETTY_FUNCTION__:
// std::source_location is missing from clang 14 with libstdc++ 12).
std::string function_context(std::string_view signature);

// The decorator form for any callable: traced("ctx", f)(args…) runs f inside a TraceScope.
template <class F>
auto traced(std::string ctx, F&& function) {
  return [ctx = std::move(ctx),
          function = std::forward<F>(function)](auto&&... args) mutable -> decltype(auto) {
    TraceScope scope{ctx};
    return function(std::forward<decltype(args)>(args)...);
  };
}

}  // namespace gpumem

// The decorator form for a function body: reports as "(Class::method: exit)" when it returns.
#define GPUMEM_TRACE_FUNCTION()                       \
  ::gpumem::TraceScope gpumem_trace_function_scope_ { \
    ::gpumem::function_context(__PRETTY_FUNCTION__)   \
  }
