#include <optional>

#include "gpumem/cache.hpp"
#include "gpumem/trace.hpp"

namespace gpumem {
namespace {

TraceBytes to_trace_bytes(const PeakReading& reading) {
  TraceBytes bytes;
  bytes.source = reading.source;
  bytes.quantity = reading.quantity;
  bytes.reading = reading;
  bytes.device = reading.device;
  bytes.start = reading.start_bytes;
  bytes.end = reading.current_bytes;
  bytes.peak = reading.peak_bytes;
  std::tie(bytes.delta_used, bytes.delta_peaked) = trace_deltas(bytes.start, bytes.end, bytes.peak);
  return bytes;
}

}  // namespace

struct GPUMemTrace::State {
  TraceOptions options;
  std::optional<PeakCounter> counter;                  // present while running
  TraceBytes frozen;                                   // the data at stop()
  std::optional<AttributionSnapshot> frozen_snapshot;  // the peak snapshot at stop()

  explicit State(TraceOptions given) : options(std::move(given)) {
    if (!options.sink) options.sink = stdout_sink();
  }

  void release_caches_if_asked() const {
    if (options.no_cache) release_caches();
  }

  TraceBytes measure() {
    if (!counter) return frozen;
    release_caches_if_asked();
    return to_trace_bytes(counter->read());
  }
};

GPUMemTrace::GPUMemTrace(bool silent, std::optional<std::string> ctx, bool on_exit_report)
    : GPUMemTrace(TraceOptions{
          .silent = silent, .ctx = std::move(ctx), .on_exit_report = on_exit_report}) {}

GPUMemTrace::GPUMemTrace(TraceOptions options)
    : state_(std::make_unique<State>(std::move(options))) {
  start();
}

// Side-effect free: no report, no cache release (fastai.utils.mem's __del__ emptied the cache).
GPUMemTrace::~GPUMemTrace() = default;
GPUMemTrace::GPUMemTrace(GPUMemTrace&&) noexcept = default;
GPUMemTrace& GPUMemTrace::operator=(GPUMemTrace&&) noexcept = default;

void GPUMemTrace::start() {
  state_->release_caches_if_asked();
  if (state_->counter) {
    state_->counter->reset();
  } else {
    state_->frozen_snapshot.reset();
    state_->counter.emplace(state_->options.device, state_->options.source,
                            state_->options.attribute ? Attribution::on : Attribution::off);
  }
}

void GPUMemTrace::stop() {
  if (!state_->counter) return;
  state_->frozen = state_->measure();
  state_->frozen_snapshot = peak_snapshot();
  // Stopped traces hold no CUPTI subscription and no sampler thread.
  state_->counter.reset();
}

void GPUMemTrace::reset() {
  if (state_->counter) {
    state_->release_caches_if_asked();
    state_->counter->reset();
    return;
  }
  // Stopped: the frozen data re-baselines on its own end.
  TraceBytes& frozen = state_->frozen;
  frozen.start = frozen.peak = frozen.end;
  frozen.delta_used = frozen.delta_peaked = 0;
}

std::pair<std::int64_t, std::int64_t> GPUMemTrace::data() {
  const TraceBytes bytes = data_bytes();
  // fastai.utils.mem's arithmetic on its MB readings (each truncated on its own).
  return trace_deltas(b2mb(bytes.start), b2mb(bytes.end), b2mb(bytes.peak));
}

TraceBytes GPUMemTrace::data_bytes() {
  return state_->measure();
}

void GPUMemTrace::report(std::optional<std::string> subctx) {
  if (state_->options.silent) return;
  const auto [used, peaked] = data();
  state_->options.sink(format_report(used, peaked, state_->options.ctx, subctx));
}

void GPUMemTrace::report_n_reset(std::optional<std::string> subctx) {
  // A report that measured has just released the caches: the new baseline needs no second round.
  const bool measured = !state_->options.silent && state_->counter;
  report(std::move(subctx));
  if (measured) {
    state_->counter->reset();
  } else {
    reset();
  }
}

void GPUMemTrace::silent(bool silent) noexcept {
  state_->options.silent = silent;
}
bool GPUMemTrace::is_silent() const noexcept {
  return state_->options.silent;
}
bool GPUMemTrace::is_running() const noexcept {
  return state_->counter.has_value();
}
bool GPUMemTrace::on_exit_report() const noexcept {
  return state_->options.on_exit_report;
}
const std::optional<std::string>& GPUMemTrace::ctx() const noexcept {
  return state_->options.ctx;
}

Source GPUMemTrace::source() const noexcept {
  return state_->counter ? state_->counter->source() : state_->frozen.source;
}

std::string GPUMemTrace::repr() {
  const auto [used, peaked] = data();
  return format_report(used, peaked, std::nullopt, std::nullopt);
}

TraceScope::TraceScope(std::optional<std::string> ctx, bool on_exit_report, bool silent)
    : trace_(silent, std::move(ctx), on_exit_report) {}

TraceScope::TraceScope(TraceOptions options) : trace_(std::move(options)) {}

TraceScope::~TraceScope() {
  // Leaving by an exception too: a destructor must not throw, so a failing sink is dropped.
  try {
    trace_.stop();
    if (trace_.on_exit_report()) trace_.report("exit");
  } catch (...) {
  }
}

std::optional<AttributionSnapshot> GPUMemTrace::peak_snapshot() {
  if (!state_->counter) return state_->frozen_snapshot;
  std::optional<AttributionSnapshot> snapshot = state_->counter->peak_snapshot();
  if (snapshot) snapshot->scope = state_->options.ctx;
  return snapshot;
}

}  // namespace gpumem
