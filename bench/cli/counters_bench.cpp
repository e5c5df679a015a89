// What one device-memory event costs a process measured by `gpumem run`, in the shared counters
// alone: the level and peak (always), and the timeline ring (with --timeline/--plot), beside a
// bare relaxed fetch_add on a shared line (the floor) in the same run.
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>

#include "gpumem/internal/run_counters.hpp"

namespace {

using namespace gpumem;

void per_event(benchmark::State& state) {
  state.counters["per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

std::atomic<std::int64_t> floor_level{0};
void CountersFloor(benchmark::State& state) {
  for (auto _ : state) floor_level.fetch_add(1, std::memory_order_relaxed);
  per_event(state);
}
BENCHMARK(CountersFloor);

// An allocation and its free, alternating, so the peak check runs on half of them.
void CountersEvent(benchmark::State& state, bool timeline) {
  static auto* const counters = new run::RunCounters();
  counters->timeline = timeline ? 1 : 0;
  std::int64_t delta = 4096;
  for (auto _ : state) {
    benchmark::DoNotOptimize(run::add_event(*counters, 0, delta));
    delta = -delta;
  }
  per_event(state);
}
BENCHMARK_CAPTURE(CountersEvent, level_and_peak, false);
BENCHMARK_CAPTURE(CountersEvent, with_timeline, true);

}  // namespace
