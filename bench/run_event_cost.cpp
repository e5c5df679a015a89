// What one allocation or free adds to a process under `gpumem run` (issue 32, item 5), against a
// minimal exact tracker, in paired rounds on the simulated CUDA + CUPTI: each round times the same
// N cuMemAlloc_v2 + cuMemFree_v2 pairs four ways, one after the other, in the thread's CPU time:
//   none     no CUPTI subscriber (the driver's own cost, the floor of the others)
//   minimal  a CUPTI subscriber written here: a mutex and an unordered_map per event, and the
//            level and peak beside them (exact to the byte, nothing more)
//   exact    gpumem's exact source in the process (its own counters)
//   run      the same with its ledger placed as the injection library places it under `gpumem
//            run`: a sealed counters file from create_run_counters, the process's slot in it, the
//            mirror that adds each event to the device's level and peak there, and each outermost
//            call marked in the slot's `calls` (src/run/joined_process.cpp: the same functions
//            of run_counters.hpp; the per-thread line and the ordinal's device slot are looked up
//            here as there)
//   shared   `run` with every call marked on the slot's shared `calls` word by a locked add, as
//            each call was before the per-thread lines, and as a thread beyond kCallLines is
// Each figure is the median over rounds of (variant - none) / events; the ratios are the medians
// of the rounds' own ratios, so that the machine's load moves both sides of each.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "churn_rounds.hpp"
#include "driver/abi/cupti.hpp"
#include "driver/cuda.hpp"
#include "driver/cupti.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_ledger.hpp"
#include "gpumem/internal/exact_source.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "gpumem/memory.hpp"
#include "simulated_gpu.hpp"

namespace {

using namespace gpumem;

// (b): the least an exact tracker can do through CUPTI.
class MinimalTracker {
 public:
  bool subscribe() {
    const driver::Cupti& cupti = driver::cupti();
    if (!cupti.loaded ||
        cupti.subscribe(&handle_, &MinimalTracker::callback, this) != abi::CUPTI_SUCCESS)
      return false;
    cupti.enableCallback(1, handle_, abi::CUPTI_CB_DOMAIN_DRIVER_API,
                         abi::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
    cupti.enableCallback(1, handle_, abi::CUPTI_CB_DOMAIN_DRIVER_API,
                         abi::CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
    return true;
  }
  void unsubscribe() { driver::cupti().unsubscribe(handle_); }
  std::int64_t peak() const { return peak_; }

 private:
  static void callback(void* self, abi::CUpti_CallbackDomain, abi::CUpti_CallbackId cbid,
                       const void* data) {
    const auto& call = *static_cast<const abi::CUpti_CallbackData*>(data);
    if (call.callbackSite != abi::CUPTI_API_EXIT ||
        *static_cast<const abi::CUresult*>(call.functionReturnValue) != abi::CUDA_SUCCESS)
      return;
    auto& tracker = *static_cast<MinimalTracker*>(self);
    if (cbid == abi::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
      const auto& params = *static_cast<const abi::cuMemAlloc_v2_params*>(call.functionParams);
      const std::lock_guard lock(tracker.mutex_);
      tracker.blocks_[*params.dptr] = params.bytesize;
      tracker.level_ += static_cast<std::int64_t>(params.bytesize);
      tracker.peak_ = std::max(tracker.peak_, tracker.level_);
    } else {
      const auto& params = *static_cast<const abi::cuMemFree_v2_params*>(call.functionParams);
      const std::lock_guard lock(tracker.mutex_);
      if (const auto found = tracker.blocks_.find(params.dptr); found != tracker.blocks_.end()) {
        tracker.level_ -= static_cast<std::int64_t>(found->second);
        tracker.blocks_.erase(found);
      }
    }
  }

  abi::CUpti_SubscriberHandle handle_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<abi::CUdeviceptr, std::size_t> blocks_;
  std::int64_t level_ = 0;
  std::int64_t peak_ = 0;
};

// (d): the injection library's placement, on a counters file of its own.
run::RunCounters* g_counters = nullptr;
run::ProcessSlot* g_slot = nullptr;
int g_device = -1;  // the device slot of CUDA ordinal 0

std::int64_t run_mirror(void*, int, std::int64_t delta, detail::LedgerBracket bracket) noexcept {
  if (g_device < 0) return detail::kUnbracketed;
  return run::add_bracketed_event(*g_counters, g_device, delta, bracket);
}

struct ThreadLine {
  run::ProcessSlot* slot = nullptr;
  run::CallLine* line = nullptr;
};
thread_local ThreadLine t_line;
bool g_shared_calls = false;  // `shared`: every call on the slot's word

void run_call(void*, bool entering) {
  ThreadLine& mine = t_line;
  if (g_shared_calls) {
    g_slot->calls.fetch_add(entering ? run::kCallEntered : run::kCallLeft,
                            std::memory_order_seq_cst);
    return;
  }
  if (mine.slot != g_slot) {
    mine.slot = g_slot;
    mine.line = run::take_call_line(*g_slot);
  }
  if (mine.line == nullptr) {
    g_slot->calls.fetch_add(entering ? run::kCallEntered : run::kCallLeft,
                            std::memory_order_seq_cst);
  } else if (entering) {
    run::enter_call(*mine.line);
  } else {
    run::leave_call(*mine.line);
  }
}

bool join_counters() {
  std::string path, error;
  int descriptor = -1;
  g_counters = run::create_run_counters(&path, &descriptor, &error);
  if (g_counters == nullptr) return false;
  g_slot = &g_counters->processes[0];
  g_slot->pid.store(static_cast<std::int32_t>(::getpid()));
  run::note_process_slot(*g_counters, 0);
  run::reset_calls(*g_slot);
  g_slot->pid_namespace.store(run::own_pid_namespace());
  const run::Uuid uuid{1, 2, 3};
  g_device = run::find_or_claim_device(*g_counters, uuid);
  g_slot->ordinal_device[0].store(g_device + 1);
  return g_device >= 0;
}

void place() {
  detail::place_exact_ledger({g_slot->ledger, run_mirror, g_slot}, detail::LedgerStart::carry);
  detail::set_call_observer(run_call, nullptr);
}
void unplace() {
  detail::set_call_observer(nullptr, nullptr);
  detail::unplace_exact_ledger();
}

// N allocations of 4 KiB, each freed at once: 2N events.
void churn(std::int64_t pairs) {
  const driver::Cuda& cuda = driver::cuda();
  for (std::int64_t i = 0; i < pairs; ++i) {
    abi::CUdeviceptr pointer = 0;
    if (cuda.memAlloc(&pointer, 4096) != abi::CUDA_SUCCESS) std::abort();
    cuda.memFree(pointer);
  }
}

// Blocks held through a round, allocated after its tracker started (each tracker holds them).
std::vector<abi::CUdeviceptr> g_held;
void hold(std::int64_t blocks) {
  const driver::Cuda& cuda = driver::cuda();
  for (std::int64_t i = 0; i < blocks; ++i) {
    abi::CUdeviceptr pointer = 0;
    if (cuda.memAlloc(&pointer, 4096) != abi::CUDA_SUCCESS) std::abort();
    g_held.push_back(pointer);
  }
}
void let_go() {
  for (const abi::CUdeviceptr pointer : g_held) driver::cuda().memFree(pointer);
  g_held.clear();
}

// The same churn on `threads` threads at once (each its own blocks), on threads that live as
// long as the bench, as a program's own do: each keeps its in-flight slot and its line. The
// parked thread spends no CPU time.
class Crew {
 public:
  explicit Crew(int threads) : start_(threads), end_(threads) {
    abi::CUcontext context = nullptr;
    driver::cuda().ctxGetCurrent(&context);
    for (int thread = 1; thread < threads; ++thread) {
      workers_.emplace_back([this, context] {
        driver::cuda().ctxSetCurrent(context);  // the main thread's, as a program's threads share
        for (;;) {
          start_.arrive_and_wait();
          if (pairs_ < 0) return;
          churn(pairs_);
          end_.arrive_and_wait();
        }
      });
    }
  }
  ~Crew() {
    pairs_ = -1;
    if (!workers_.empty()) start_.arrive_and_wait();
    for (std::thread& worker : workers_) worker.join();
  }
  void churn_on_all(std::int64_t pairs) {
    if (workers_.empty()) return churn(pairs);
    pairs_ = pairs;
    start_.arrive_and_wait();
    churn(pairs);
    end_.arrive_and_wait();
  }

 private:
  std::barrier<> start_, end_;
  std::int64_t pairs_ = 0;
  std::vector<std::thread> workers_;
};

double process_cpu_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

struct Variant {
  const char* name;
  std::function<void()> before, after;
  std::vector<double> ns;  // per event, each round
};

std::vector<Variant> make_variants(MinimalTracker& minimal) {
  return {
      {"none", [] {}, [] {}, {}},
      {"minimal",
       [&] {
         if (!minimal.subscribe()) std::abort();
       },
       [&] { minimal.unsubscribe(); },
       {}},
      {"exact",
       [] {
         if (!peak::acquire_exact()) std::abort();
       },
       [] { peak::release_exact(); },
       {}},
      {"run",
       [] {
         place();
         if (!peak::acquire_exact()) std::abort();
       },
       [] {
         peak::release_exact();
         unplace();
       },
       {}},
      {"shared",
       [] {
         g_shared_calls = true;
         place();
         if (!peak::acquire_exact()) std::abort();
       },
       [] {
         peak::release_exact();
         unplace();
         g_shared_calls = false;
       },
       {}},
  };
}

// range(0): allocation + free pairs per round; range(1): live blocks held meanwhile.
void BM_EventUnderRun(benchmark::State& state) {
  const std::int64_t pairs = state.range(0);
  const std::int64_t live = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const double events = 2.0 * static_cast<double>(pairs) * threads;
  Crew crew(threads);
  MinimalTracker minimal;
  if (g_counters == nullptr && !join_counters()) {
    state.SkipWithError("no counters file");
    return;
  }
  g_counters->devices[g_device].peak.store(0);  // this sweep point's own
  std::vector<Variant> variants = make_variants(minimal);
  const int kVariants = static_cast<int>(variants.size());
  constexpr int kRounds = 9;
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round) {
      // Each round starts with another variant: none always follows the same one.
      for (int turn = 0; turn < kVariants; ++turn) {
        Variant& variant = variants[(round + turn) % kVariants];
        variant.before();
        hold(live);
        churn(pairs / 16);  // warm: the block map's table, the lines
        const double start = process_cpu_ns();
        crew.churn_on_all(pairs);
        variant.ns.push_back((process_cpu_ns() - start) / events);
        let_go();
        variant.after();
      }
    }
  }
  const std::vector<double>& none = variants[0].ns;
  state.counters["none_ns"] = median(none);
  for (int index = 1; index < kVariants; ++index) {
    std::vector<double> added, ratio;
    for (int round = 0; round < kRounds; ++round) {
      added.push_back(variants[index].ns[round] - none[round]);
      ratio.push_back(added.back() / (variants[1].ns[round] - none[round]));
    }
    const std::string name = variants[index].name;
    state.counters[name + "_added_ns"] = median(added);
    if (index > 1) state.counters[name + "_ratio"] = median(ratio);
  }
  // The tracker and the run saw every byte: both peaks are the held blocks and one more.
  state.counters["minimal_peak"] = static_cast<double>(minimal.peak());
  state.counters["run_peak"] =
      static_cast<double>(g_counters->devices[g_device].peak.load(std::memory_order_relaxed));
}
BENCHMARK(BM_EventUnderRun)
    ->ArgNames({"pairs", "live_blocks", "threads"})
    ->Args({100'000, 0, 1})
    ->Args({100'000, 1'000, 1})
    ->Args({100'000, 10'000, 1})
    ->Args({100'000, 0, 2})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// `--count-events N`: each variant's N pairs once, each in a function of its own, for callgrind
// (`--collect-bus=yes` counts the locked instructions, its `Ge` event; docs/peaks.md).
[[gnu::noinline]] void counted_none(std::int64_t pairs) {
  churn(pairs);
}
[[gnu::noinline]] void counted_minimal(std::int64_t pairs) {
  churn(pairs);
}
[[gnu::noinline]] void counted_exact(std::int64_t pairs) {
  churn(pairs);
}
[[gnu::noinline]] void counted_run(std::int64_t pairs) {
  churn(pairs);
}
[[gnu::noinline]] void counted_shared(std::int64_t pairs) {
  churn(pairs);
}

int count_events(std::int64_t pairs) {
  MinimalTracker minimal;
  if (!join_counters()) return 1;
  void (*const counted[])(std::int64_t) = {counted_none, counted_minimal, counted_exact,
                                           counted_run, counted_shared};
  std::vector<Variant> variants = make_variants(minimal);
  for (std::size_t index = 0; index < variants.size(); ++index) {
    variants[index].before();
    churn(pairs);  // warm
    counted[index](pairs);
    variants[index].after();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string state = gpumem::bench::use_simulated_gpu("run-events");
  gpumem::preload();  // a current context, as in a CUDA program
  // A CUDA program has threads of its own (the driver starts some): glibc takes a mutex without
  // a locked instruction while a process has one thread only, which no CUDA program is.
  std::mutex parked;
  parked.lock();
  std::thread other([&] { const std::lock_guard wait(parked); });
  struct Unpark {
    std::mutex& parked;
    std::thread& other;
    ~Unpark() {
      parked.unlock();
      other.join();
    }
  } unpark{parked, other};
  if (argc == 3 && std::string(argv[1]) == "--count-events") {
    const int status = count_events(std::stoll(argv[2]));
    std::remove(state.c_str());
    return status;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(state.c_str());
  return 0;
}
