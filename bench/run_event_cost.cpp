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
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
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

void run_mirror(void*, int, std::int64_t delta) noexcept {
  if (g_device >= 0) run::add_event(*g_counters, g_device, delta);
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

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// range(0): allocation + free pairs per round; range(1): live blocks held meanwhile.
void BM_EventUnderRun(benchmark::State& state) {
  const std::int64_t pairs = state.range(0);
  const std::int64_t live = state.range(1);
  const double events = 2.0 * static_cast<double>(pairs);
  MinimalTracker minimal;
  if (g_counters == nullptr && !join_counters()) {
    state.SkipWithError("no counters file");
    return;
  }
  struct Variant {
    const char* name;
    std::function<void()> before, after;
    std::vector<double> ns;  // per event, each round
  };
  Variant variants[] = {
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
  constexpr int kVariants = sizeof variants / sizeof variants[0];
  constexpr int kRounds = 9;
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round) {
      // Each round starts with another variant: none always follows the same one.
      for (int turn = 0; turn < kVariants; ++turn) {
        Variant& variant = variants[(round + turn) % kVariants];
        variant.before();
        hold(live);
        churn(pairs / 16);  // warm: the block map's table, the lines
        const double start = bench::thread_cpu_ns();
        churn(pairs);
        variant.ns.push_back((bench::thread_cpu_ns() - start) / events);
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
    ->ArgNames({"pairs", "live_blocks"})
    ->Args({100'000, 0})
    ->Args({100'000, 1'000})
    ->Args({100'000, 100'000})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  const std::string sim = GPUMEM_SIM_DIR;
  const std::string state = "/tmp/gpumem-bench-run-events-" + std::to_string(::getpid()) + ".state";
  ::setenv("GPUMEM_SIM_STATE", state.c_str(), 1);
  ::setenv("GPUMEM_SIM_CONFIG", R"({"devices": [{"name": "NVIDIA H200", "context_mib": 0}]})", 1);
  ::setenv("GPUMEM_NVML_LIBRARY", (sim + "/libnvidia-ml.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", (sim + "/libcuda.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUPTI_LIBRARY", (sim + "/libcupti.so.13").c_str(), 1);
  gpumem::preload();  // a current context, as in a CUDA program
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(state.c_str());
  return 0;
}
