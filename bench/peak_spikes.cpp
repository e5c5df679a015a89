// Spike capture of the sampled source at its default interval, beside the seed's algorithm (a
// Python thread sleeping 1 ms between NVML reads, bench/seed_sampler.py) in the same run, and the
// sampler's CPU cost. Spikes come from another process (gpumem_bench_spiker) on a simulated GPU.
//
//   gpumem_bench_spikes [spikes per duration = 300] [cpu seconds = 2]
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "gpumem/peak.hpp"

extern char** environ;

namespace {

constexpr const char* kOneGpu =
    R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}]})";

std::string sim(const char* file) {
  return std::string(GPUMEM_SIM_DIR) + "/" + file;
}

void use_private_simulated_gpu() {
  static const std::string state =
      "/tmp/gpumem-bench-spikes-" + std::to_string(::getpid()) + ".state";
  ::unlink(state.c_str());  // one left by an earlier run under the same pid
  std::atexit([] { ::unlink(state.c_str()); });
  ::setenv("GPUMEM_SIM_STATE", state.c_str(), 1);
  ::setenv("GPUMEM_SIM_CONFIG", kOneGpu, 1);
  ::setenv("GPUMEM_NVML_LIBRARY", sim("libnvidia-ml.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", sim("libcuda.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUPTI_LIBRARY", sim("libcupti.so.13").c_str(), 1);
}

class Spiker {
 public:
  Spiker() {
    int to_child[2];
    int from_child[2];
    if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) std::exit(2);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    posix_spawn_file_actions_addclose(&actions, to_child[1]);
    posix_spawn_file_actions_addclose(&actions, from_child[0]);
    char path[] = GPUMEM_SPIKER;
    char* argv[] = {path, nullptr};
    if (posix_spawn(&pid_, path, &actions, nullptr, argv, environ) != 0) std::exit(2);
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = ::fdopen(to_child[1], "w");
    out_ = ::fdopen(from_child[0], "r");
    if (line() != "ready") std::exit(3);
  }
  ~Spiker() {
    std::fclose(in_);
    std::fclose(out_);
    ::waitpid(pid_, nullptr, 0);
  }
  void spike(std::size_t bytes, long micros) {
    std::fprintf(in_, "%zu %ld\n", bytes, micros);
    std::fflush(in_);
    if (line() != "done") std::exit(3);
  }

 private:
  std::string line() {
    char buffer[64] = {};
    if (std::fgets(buffer, sizeof buffer, out_) == nullptr) return {};
    std::string text(buffer);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
  }
  pid_t pid_ = 0;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
};

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// % of one core the process spends over `seconds` of idling, with or without a sampler.
double idle_cpu_percent(double seconds, bool with_sampler) {
  std::optional<gpumem::PeakCounter> counter;
  if (with_sampler) counter.emplace(0, gpumem::Source::sampled);
  const double before = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 100.0 * (cpu_seconds() - before) / wall;
}

}  // namespace

int main(int argc, char** argv) {
  const int spikes = argc > 1 ? std::atoi(argv[1]) : 300;
  const double cpu_window = argc > 2 ? std::atof(argv[2]) : 2.0;
  use_private_simulated_gpu();
  constexpr std::size_t kSpike = 8ull << 20;
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> phase_us(0, 2000);

  const auto interval_us =
      std::chrono::duration_cast<std::chrono::microseconds>(gpumem::sampling_interval()).count();
  {
    Spiker spiker;
    gpumem::PeakCounter counter(0, gpumem::Source::sampled);
    if (counter.source() != gpumem::Source::sampled) {
      std::fprintf(stderr, "no sampled source on the simulator\n");
      return 1;
    }
    for (const long micros : {2000L, 1000L}) {
      int caught = 0;
      for (int i = 0; i < spikes; ++i) {
        counter.reset();
        std::this_thread::sleep_for(std::chrono::microseconds(phase_us(random)));
        spiker.spike(kSpike, micros);
        const gpumem::PeakReading reading = counter.read();
        if (reading.peak_bytes - reading.start_bytes >= static_cast<std::int64_t>(kSpike)) ++caught;
      }
      std::printf("gpumem sampled (%lld us interval): %ld ms spikes caught %d/%d = %.1f%%\n",
                  static_cast<long long>(interval_us), micros / 1000, caught, spikes,
                  100.0 * caught / spikes);
      std::fflush(stdout);
    }
  }

  const double base = idle_cpu_percent(cpu_window, false);
  const double sampled = idle_cpu_percent(cpu_window, true);
  std::printf("gpumem sampler CPU at %lld us: %.2f%% of one core (idle process: %.2f%%)\n",
              static_cast<long long>(interval_us), sampled - base, base);
  gpumem::set_sampling_interval(std::chrono::milliseconds(1));
  std::printf("gpumem sampler CPU at 1000 us: %.2f%% of one core\n",
              idle_cpu_percent(cpu_window, true) - base);
  gpumem::set_sampling_interval(std::chrono::nanoseconds(0));
  std::fflush(stdout);

  // The seed's thread, same simulator, same spiker, in the same run.
  const std::string seed = std::string("python3 ") + GPUMEM_SEED_SAMPLER + " " + GPUMEM_SPIKER +
                           " " + std::to_string(spikes);
  const int status = std::system(seed.c_str());
  std::remove(std::getenv("GPUMEM_SIM_STATE"));
  return status == 0 ? 0 : 1;
}
