// gpu_mem_get and gpu_mem_get_used_fast against the raw NVML memory call they wrap, measured in
// the same run on the simulated GPU (the raw call dlopens the simulator's NVML directly).
// Targets: gpu_mem_get <= 2x the raw call, gpu_mem_get_used_fast <= 1.1x. The last lines print
// the ratios of the median times. --cuda runs them in a process with CUDA initialised.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "driver/abi/nvml.hpp"
#include "gpumem/gpumem.hpp"
#include "support/sim_gpu.hpp"

namespace {

using namespace gpumem;

struct RawNvml {
  abi::PFN_nvmlDeviceGetMemoryInfo_v2 memory_v2 = nullptr;
  abi::nvmlDevice_t device = nullptr;
};

// The seed's own path: the library's handle for NVML index `index`, then the v2 memory call.
RawNvml open_raw_nvml(unsigned index) {
  RawNvml raw;
  void* library = ::dlopen(testing::sim_path("libnvidia-ml.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return raw;
  auto init = reinterpret_cast<abi::PFN_nvmlInit_v2>(::dlsym(library, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<abi::PFN_nvmlDeviceGetHandleByIndex>(
      ::dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  raw.memory_v2 = reinterpret_cast<abi::PFN_nvmlDeviceGetMemoryInfo_v2>(
      ::dlsym(library, "nvmlDeviceGetMemoryInfo_v2"));
  if (init == nullptr || by_index == nullptr || raw.memory_v2 == nullptr || init() != 0 ||
      by_index(index, &raw.device) != 0) {
    raw.memory_v2 = nullptr;
  }
  return raw;
}

void BM_RawNvmlMemoryInfo(benchmark::State& state) {
  // Ordinal 0 of kTwoGpus is NVML index 1.
  static const RawNvml raw = open_raw_nvml(1);
  if (raw.memory_v2 == nullptr) {
    state.SkipWithError("cannot load the simulated NVML");
    return;
  }
  for (auto _ : state) {
    abi::nvmlMemory_v2_t memory{};
    memory.version = abi::kNvmlMemory_v2;
    benchmark::DoNotOptimize(raw.memory_v2(raw.device, &memory));
    benchmark::DoNotOptimize(memory.used);
  }
}

// What gpu_mem_get() must do in a CUDA program, made raw: ask the driver for the calling thread's
// device (cuCtxGetDevice: the current device is its current context's), then the NVML call. The
// baseline of gpu_mem_get() with --cuda; without CUDA no call is needed (ordinal 0).
using CtxGetDevice = int (*)(int*);
void BM_RawCtxGetDeviceAndNvml(benchmark::State& state) {
  static const RawNvml raw = open_raw_nvml(1);
  static const auto ctx_get_device = reinterpret_cast<CtxGetDevice>(
      ::dlsym(::dlopen(testing::sim_path("libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL),
              "cuCtxGetDevice"));
  if (raw.memory_v2 == nullptr || ctx_get_device == nullptr) {
    state.SkipWithError("cannot load the simulated NVML or CUDA");
    return;
  }
  for (auto _ : state) {
    int device = 0;
    benchmark::DoNotOptimize(ctx_get_device(&device));
    abi::nvmlMemory_v2_t memory{};
    memory.version = abi::kNvmlMemory_v2;
    benchmark::DoNotOptimize(raw.memory_v2(raw.device, &memory));
    benchmark::DoNotOptimize(memory.used);
  }
}

void BM_GpuMemGet(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu_mem_get(0));
}

void BM_GpuMemGetCurrentDevice(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu_mem_get());
}

void BM_GpuMemGetUsedFast(benchmark::State& state) {
  const GpuHandle handle = gpu_handle(0);
  for (auto _ : state) benchmark::DoNotOptimize(gpu_mem_get_used_fast(handle));
}

// Interleaved so that the machine's drift hits each variant alike.
BENCHMARK(BM_RawNvmlMemoryInfo);
BENCHMARK(BM_RawCtxGetDeviceAndNvml);
BENCHMARK(BM_GpuMemGet);
BENCHMARK(BM_GpuMemGetUsedFast);
BENCHMARK(BM_GpuMemGetCurrentDevice);

// Keeps each benchmark's per-iteration CPU time for the ratio lines: the fastest repetition (the
// one least disturbed by other processes) and the median.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const std::string base = run.run_name.function_name;
      if (run.run_type != Run::RT_Aggregate) samples_[base].push_back(run.GetAdjustedCPUTime());
    }
  }

  double fastest(const std::string& name) const { return pick(name, false); }
  double median(const std::string& name) const { return pick(name, true); }

 private:
  double pick(const std::string& name, bool middle) const {
    auto it = samples_.find(name);
    if (it == samples_.end() || it->second.empty()) return 0;
    std::vector<double> sorted = it->second;
    std::sort(sorted.begin(), sorted.end());
    return middle ? sorted[sorted.size() / 2] : sorted.front();
  }

  std::map<std::string, std::vector<double>> samples_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::SimGpu sim;  // a private simulated state with kTwoGpus
  // --cuda: the same with CUDA initialised and a context current first, as in a CUDA program
  // (the device map then comes from the driver, and the current device is its context's).
  std::vector<char*> args(argv, argv + argc);
  const auto cuda_flag = std::find_if(args.begin() + 1, args.end(),
                                      [](const char* arg) { return std::string(arg) == "--cuda"; });
  const bool with_cuda = cuda_flag != args.end();
  if (with_cuda) args.erase(cuda_flag);
  if (with_cuda && !preload()) {
    std::fprintf(stderr, "cannot initialise the simulated CUDA: %s\n", last_diagnostic().c_str());
    return 1;
  }
  // Defaults that make ratios trustworthy on a shared machine: repetitions interleaved at random
  // across the four benchmarks (drift hits each alike) and the fastest repetition of each kept.
  std::string repetitions = "--benchmark_repetitions=15";
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  std::string min_time = "--benchmark_min_time=0.05";
  if (args.size() == 1) {
    args.insert(args.end(), {repetitions.data(), interleave.data(), min_time.data()});
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  if (gpu_mem_get(0).total == 0) {
    std::fprintf(stderr, "gpumem cannot read the simulated GPU: %s\n", last_diagnostic().c_str());
    return 1;
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double raw = reporter.fastest("BM_RawNvmlMemoryInfo");
  if (raw <= 0) return 1;
  const double raw_median = reporter.median("BM_RawNvmlMemoryInfo");
  std::printf(
      "raw nvmlDeviceGetMemoryInfo_v2: %.2f ns CPU (fastest repetition), %.2f ns (median)%s\n", raw,
      raw_median, with_cuda ? ", CUDA initialised" : "");
  const struct {
    const char* label;
    const char* name;
    double target;
  } rows[] = {{"gpu_mem_get(0)", "BM_GpuMemGet", 2.0},
              {"gpu_mem_get()", "BM_GpuMemGetCurrentDevice", 2.0},
              {"gpu_mem_get_used_fast", "BM_GpuMemGetUsedFast", 1.1}};
  for (const auto& row : rows) {
    std::printf("ratio %s/raw: %.3f fastest, %.3f median (target <= %.1f)\n", row.label,
                reporter.fastest(row.name) / raw, reporter.median(row.name) / raw_median,
                row.target);
  }
  if (const double pair = reporter.median("BM_RawCtxGetDeviceAndNvml"); pair > 0) {
    std::printf("ratio gpu_mem_get()/(raw cuCtxGetDevice + raw NVML): %.3f median\n",
                reporter.median("BM_GpuMemGetCurrentDevice") / pair);
  }
  return 0;
}
