// The simulated GPU's costs, as ratios within one run: a cuMemAlloc_v2/cuMemFree_v2 pair with no
// CUPTI subscriber (the baseline: one atomic load of the dispatcher), with a subscriber whose
// callbacks are disabled, and with an empty callback enabled; and the NVML memory query against
// which gpumem's fast paths are measured.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <string>

#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"
#include "driver/abi/nvml.hpp"
#include "support/sim_gpu.hpp"

namespace {

using namespace gpumem::abi;
using gpumem::testing::sim_path;

template <class Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(library, name));
}

struct Driver {
  PFN_cuMemAlloc alloc = nullptr;
  PFN_cuMemFree free = nullptr;
  PFN_cuptiSubscribe subscribe = nullptr;
  PFN_cuptiUnsubscribe unsubscribe = nullptr;
  PFN_cuptiEnableDomain enable_domain = nullptr;

  static const Driver& get() {
    static const Driver driver = [] {
      Driver d;
      void* cuda = ::dlopen(sim_path("libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
      void* cupti = ::dlopen(sim_path("libcupti.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
      if (cuda == nullptr || cupti == nullptr ||
          symbol<PFN_cuInit>(cuda, "cuInit")(0) != CUDA_SUCCESS)
        return d;
      CUcontext context = nullptr;
      symbol<PFN_cuDevicePrimaryCtxRetain>(cuda, "cuDevicePrimaryCtxRetain")(&context, 0);
      symbol<PFN_cuCtxSetCurrent>(cuda, "cuCtxSetCurrent")(context);
      d.alloc = symbol<PFN_cuMemAlloc>(cuda, "cuMemAlloc_v2");
      d.free = symbol<PFN_cuMemFree>(cuda, "cuMemFree_v2");
      d.subscribe = symbol<PFN_cuptiSubscribe>(cupti, "cuptiSubscribe");
      d.unsubscribe = symbol<PFN_cuptiUnsubscribe>(cupti, "cuptiUnsubscribe");
      d.enable_domain = symbol<PFN_cuptiEnableDomain>(cupti, "cuptiEnableDomain");
      return d;
    }();
    return driver;
  }
};

void empty_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// mode 0: no subscriber; 1: subscribed, nothing enabled; 2: driver domain enabled.
void BM_AllocFree(benchmark::State& state) {
  const Driver& d = Driver::get();
  if (d.alloc == nullptr) {
    state.SkipWithError("cannot load the simulated driver");
    return;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  if (state.range(0) > 0) {
    d.subscribe(&subscriber, empty_callback, nullptr);
    if (state.range(0) > 1) d.enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  for (auto _ : state) {
    CUdeviceptr p = 0;
    benchmark::DoNotOptimize(d.alloc(&p, 4096));
    benchmark::DoNotOptimize(d.free(p));
  }
  if (subscriber != nullptr) d.unsubscribe(subscriber);
}
BENCHMARK(BM_AllocFree)->Arg(0)->Arg(1)->Arg(2)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_NvmlMemoryInfoV2(benchmark::State& state) {
  static const auto setup = [] {
    std::pair<PFN_nvmlDeviceGetMemoryInfo_v2, nvmlDevice_t> result{nullptr, nullptr};
    void* nvml = ::dlopen(sim_path("libnvidia-ml.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (nvml == nullptr || symbol<PFN_nvmlInit_v2>(nvml, "nvmlInit_v2")() != NVML_SUCCESS)
      return result;
    symbol<PFN_nvmlDeviceGetHandleByIndex>(nvml, "nvmlDeviceGetHandleByIndex_v2")(0,
                                                                                  &result.second);
    result.first = symbol<PFN_nvmlDeviceGetMemoryInfo_v2>(nvml, "nvmlDeviceGetMemoryInfo_v2");
    return result;
  }();
  if (setup.first == nullptr) {
    state.SkipWithError("cannot load the simulated NVML");
    return;
  }
  for (auto _ : state) {
    nvmlMemory_v2_t memory{};
    memory.version = kNvmlMemory_v2;
    benchmark::DoNotOptimize(setup.first(setup.second, &memory));
  }
}
BENCHMARK(BM_NvmlMemoryInfoV2)->Repetitions(5)->ReportAggregatesOnly(true);

// Prints each configuration's median time relative to the unsubscribed allocation.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.aggregate_name == "median")
        medians_[run.benchmark_name()] = run.GetAdjustedRealTime();
    }
  }
  void print_ratios() const {
    double base = 0;
    for (const auto& [name, time] : medians_) {
      if (name.rfind("BM_AllocFree/0/", 0) == 0) base = time;
    }
    if (base <= 0) return;
    for (const auto& [name, time] : medians_) {
      std::printf("ratio %-40s %.2fx the unsubscribed alloc+free\n", name.c_str(), time / base);
    }
  }

 private:
  std::map<std::string, double> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  gpumem::testing::SimGpu gpu;
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
