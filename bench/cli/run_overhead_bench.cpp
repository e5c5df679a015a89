// What `gpumem run` costs an allocation-heavy program: the same simulated workload run bare and
// under `gpumem run` (exact and sampled), alternating in one process so both see the same
// machine. The `ratio` counter is wrapped time / bare time (targets: sampled <= 1.05, exact
// <= 1.05; exact_timeline also writes --timeline and --plot, every event going to the timeline
// ring). RunStartup gives the fixed cost `gpumem run` adds to each CUDA process of a job
// (`per_process_ms`, target <= 2 ms): ten short processes against one, wrapped against bare.
#include <spawn.h>
#include <sys/wait.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/sim_gpu.hpp"

extern char** environ;

namespace {

std::string allocation_heavy_script() {
  std::string script;
  for (int i = 0; i < 2000; ++i) script += "alloc a 1MiB; alloc b 3MiB; free a; free b; ";
  return script + "print done";
}

double run_seconds(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", 01, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 01, 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int status = 0;
  if (::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) == 0) {
    ::waitpid(pid, &status, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `timeline`: also write --timeline and --plot, so every event goes to the timeline ring too.
void RunOverhead(benchmark::State& state, const char* mode, bool timeline) {
  gpumem::testing::SimGpu gpu;
  const std::string tool = gpumem::testing::sim_path("gpumem-sim");
  // Ten CUDA processes in a row, each making 8000 allocation calls.
  const std::vector<std::string> bare = {
      "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do \"$0\" workload \"$1\"; done", tool,
      allocation_heavy_script()};
  std::vector<std::string> wrapped = {GPUMEM_CLI_PATH, "run", "--mode", mode};
  const std::string folder = std::filesystem::temp_directory_path().string() + "/";
  if (timeline) {
    wrapped.insert(wrapped.end(), {"--timeline", folder + "bench-timeline.csv", "--plot",
                                   folder + "bench-plot.svg"});
  }
  wrapped.push_back("--");
  wrapped.insert(wrapped.end(), bare.begin(), bare.end());
  run_seconds(bare);  // creates the simulator's state file outside the measurement
  double bare_total = 0, wrapped_total = 0;
  for (auto _ : state) {
    bare_total += run_seconds(bare);
    const double seconds = run_seconds(wrapped);
    wrapped_total += seconds;
    state.SetIterationTime(seconds);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["bare_ms"] = bare_total / runs * 1e3;
  state.counters["wrapped_ms"] = wrapped_total / runs * 1e3;
  state.counters["ratio"] = wrapped_total / bare_total;
}

// Ten processes that only start CUDA and make one allocation, and one such process: the
// difference of the wrapped and bare differences, over nine, is what each extra process pays.
void RunStartup(benchmark::State& state, const char* mode) {
  gpumem::testing::SimGpu gpu;
  const std::string tool = gpumem::testing::sim_path("gpumem-sim");
  auto job = [&](int processes) {
    return std::vector<std::string>{
        "/bin/sh",
        "-c",
        "i=0; while [ $i -lt $2 ]; do \"$0\" workload \"$1\"; i=$((i+1)); done",
        tool,
        "alloc a 1MiB; free a",
        std::to_string(processes)};
  };
  auto wrap = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), {GPUMEM_CLI_PATH, "run", "--mode", mode, "--"});
    return argv;
  };
  run_seconds(job(1));
  double extra_ten = 0, extra_one = 0;
  for (auto _ : state) {
    const double bare_ten = run_seconds(job(10));
    const double wrapped_ten = run_seconds(wrap(job(10)));
    const double bare_one = run_seconds(job(1));
    const double wrapped_one = run_seconds(wrap(job(1)));
    extra_ten += wrapped_ten - bare_ten;
    extra_one += wrapped_one - bare_one;
    state.SetIterationTime(wrapped_ten);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["run_fixed_ms"] = (extra_one - (extra_ten - extra_one) / 9) / runs * 1e3;
  state.counters["per_process_ms"] = (extra_ten - extra_one) / 9 / runs * 1e3;
}

BENCHMARK_CAPTURE(RunStartup, exact, "exact")
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(RunOverhead, sampled, "sampled", false)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(RunOverhead, exact, "exact", false)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(RunOverhead, exact_timeline, "exact", true)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
