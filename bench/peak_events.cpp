// The peak engine's costs: one allocation event against the number of live counters (0, 1, 8,
// 64) and threads (1, 2), beside a bare atomic add (the floor) in the same run; the exact
// source's whole callback path, bare and as a process under `gpumem run` pays it; and
// GPUMemTrace start()+stop() without cache hooks.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "callback_pair.hpp"
#include "driver/abi/cupti.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_ledger.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/trace.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "simulated_gpu.hpp"

namespace {

using namespace gpumem;

void per_event(benchmark::State& state, std::int64_t events) {
  state.counters["per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The floor: what two relaxed fetch_adds on a shared line cost.
std::atomic<std::int64_t> bare_level{0};
void BM_BareAtomicAdd(benchmark::State& state) {
  for (auto _ : state) {
    bare_level.fetch_add(64, std::memory_order_relaxed);
    bare_level.fetch_add(-64, std::memory_order_relaxed);
  }
  per_event(state, state.iterations() * 2);
}
BENCHMARK(BM_BareAtomicAdd)->Threads(1)->Threads(2);

peak::Channel engine_channel;
std::vector<std::unique_ptr<peak::CounterSlot>> engine_slots;

// An allocation and its free into a channel with `range(0)` live counters.
void BM_ChannelEvent(benchmark::State& state) {
  if (state.thread_index() == 0) {
    for (int i = 0; i < state.range(0); ++i) {
      engine_slots.push_back(std::make_unique<peak::CounterSlot>());
      engine_channel.attach(*engine_slots.back());
    }
  }
  for (auto _ : state) {
    engine_channel.add(64);
    engine_channel.add(-64);
  }
  per_event(state, state.iterations() * 2);
  if (state.thread_index() == 0) {
    for (auto& slot : engine_slots) engine_channel.detach(*slot);
    engine_slots.clear();
  }
}
BENCHMARK(BM_ChannelEvent)
    ->ArgName("live_counters")
    ->Arg(0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Threads(1)
    ->Threads(2);

// The exact source's whole path for one cuMemAlloc_v2 + cuMemFree_v2 (three callbacks: alloc
// EXIT, free ENTER, free EXIT), with the block map, as CUPTI would call it.
void BM_ExactCallbacks(benchmark::State& state) {
  static std::atomic<std::uint64_t> next_address{1ull << 40};
  peak::Channel* channel = peak::channel(peak::Stream::exact, 0);
  std::vector<peak::CounterSlot> slots(static_cast<std::size_t>(state.range(0)));
  if (state.thread_index() == 0) {
    for (auto& slot : slots) channel->attach(slot);
  }
  bench::CallbackPair pair(next_address.fetch_add(1ull << 30));
  for (auto _ : state) pair();
  per_event(state, state.iterations() * 2);
  if (state.thread_index() == 0) {
    for (auto& slot : slots) channel->detach(slot);
  }
}
BENCHMARK(BM_ExactCallbacks)->ArgName("live_counters")->Arg(0)->Arg(64)->Threads(1)->Threads(2);

// The same path in a process under `gpumem run`: the injection library places the exact source's
// ledger in the process's slot of the shared counters (exact_ledger.hpp), with a mirror that adds
// each event to the device's level and peak there first, and marks each call's ENTER and EXIT in
// the thread's line of the slot's `calls` (src/run/joined_process.cpp). Here the same placement and
// observers work on a private copy of the file: the difference from BM_ExactCallbacks is what the
// run's device level and the `calls` word cost, each event moving the ledger once.
gpumem::run::RunCounters* run_counters() {
  static auto* const counters = new gpumem::run::RunCounters{};  // zeroed, as the file starts
  return counters;
}
std::int64_t injected_event(void*, int, std::int64_t delta,
                            gpumem::detail::LedgerBracket bracket) noexcept {
  return gpumem::run::add_bracketed_event(*run_counters(), 0, delta, bracket);
}
void injected_call(void*, bool entering) {
  // The calling thread's own line of the slot's `calls`, as joined_process.cpp marks them.
  thread_local gpumem::run::CallLine* const line =
      gpumem::run::take_call_line(run_counters()->processes[0]);
  if (line == nullptr) {
    run_counters()->processes[0].calls.fetch_add(
        entering ? gpumem::run::kCallEntered : gpumem::run::kCallLeft, std::memory_order_seq_cst);
  } else if (entering) {
    gpumem::run::enter_call(*line);
  } else {
    gpumem::run::leave_call(*line);
  }
}
void BM_InjectedCallbacks(benchmark::State& state) {
  static std::atomic<std::uint64_t> next_address{1ull << 41};
  if (state.thread_index() == 0) {
    gpumem::detail::place_exact_ledger(
        {run_counters()->processes[0].ledger, injected_event, nullptr},
        gpumem::detail::LedgerStart::carry);
    gpumem::detail::set_call_observer(injected_call, nullptr);
  }
  bench::CallbackPair pair(next_address.fetch_add(1ull << 30));
  for (auto _ : state) pair();
  per_event(state, state.iterations() * 2);
  if (state.thread_index() == 0) {
    gpumem::detail::unplace_exact_ledger();
    gpumem::detail::set_call_observer(nullptr, nullptr);
  }
}
BENCHMARK(BM_InjectedCallbacks)->Threads(1);

// start()+stop() of a trace without cache hooks, on the simulator: the exact source subscribes
// to CUPTI at start and lets go at stop; the reported one shows the engine's own part.
void BM_TraceStartStop(benchmark::State& state) {
  TraceOptions options;
  options.silent = true;
  options.no_cache = false;
  options.device = 0;
  options.source = static_cast<Source>(state.range(0));
  GPUMemTrace trace(options);
  trace.stop();
  for (auto _ : state) {
    trace.start();
    trace.stop();
  }
  state.SetLabel(std::string(to_string(trace.source())));
}
BENCHMARK(BM_TraceStartStop)
    ->ArgName("source")
    ->Arg(static_cast<int>(Source::exact))
    ->Arg(static_cast<int>(Source::reported))
    ->Arg(static_cast<int>(Source::sampled))
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  const std::string state = gpumem::bench::use_simulated_gpu("peak");
  gpumem::preload();  // a current context, as in a CUDA program
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(state.c_str());
  return 0;
}
