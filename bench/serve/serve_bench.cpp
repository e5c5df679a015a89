// `gpumem serve` under load: 8 simulated GPUs, 64 processes holding memory on them.
#include <benchmark/benchmark.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "gpumem/device.hpp"
#include "gpumem/memory.hpp"
#include "serve/exporter_process.hpp"
#include "serve/http_client.hpp"
#include "support/sim_gpu.hpp"

namespace {

using namespace std::chrono_literals;
using gpumem::testing::ExporterProcess;
using gpumem::testing::RawClient;

constexpr int kGpus = 8;

std::string eight_gpus() {
  std::string config = R"({"driver_version": "580.95.05", "devices": [)";
  for (int i = 0; i < kGpus; ++i) {
    config += std::string(i ? "," : "") + R"({"name": "NVIDIA H200", "total_mib": 143771,)" +
              R"( "reserved_mib": 542, "context_mib": 500})";
  }
  return config + "]}";
}

// The node: simulated GPUs with 64 live processes on them, and one exporter per interval asked.
class Node {
 public:
  Node() : Node(kGpus, 3) {}
  // `workloads` of the GPUs each run one process that forks `forks` times (2^forks processes).
  Node(int workloads, int forks) : gpu_(eight_gpus()) {
    std::string forking;
    for (int i = 0; i < forks; ++i) forking += "fork; ";
    expected_ = static_cast<std::size_t>(workloads) << forks;
    for (int i = 0; i < workloads; ++i) {
      std::string script =
          "device " + std::to_string(i) + "; " + forking + "alloc a 256MiB; sleep 600s";
      pid_t pid = ::fork();
      if (pid == 0) {
        ::setpgid(0, 0);  // its own group, so that its forks go with it
        std::string tool = gpumem::testing::sim_path("gpumem-sim");
        ::execl(tool.c_str(), tool.c_str(), "workload", script.c_str(), nullptr);
        ::_exit(127);
      }
      ::setpgid(pid, pid);
      workloads_.push_back(pid);
    }
    // Until every process shows its memory.
    auto exporter = start("10ms");
    for (int i = 0; i < 300 && processes(exporter->port()) < expected_; ++i) {
      std::this_thread::sleep_for(100ms);
    }
  }
  ~Node() {
    for (pid_t group : workloads_) ::kill(-group, SIGKILL);
    for (pid_t group : workloads_) ::waitpid(group, nullptr, 0);
  }

  std::unique_ptr<ExporterProcess> start(const std::string& interval) {
    auto exporter = std::make_unique<ExporterProcess>(std::vector<std::string>{
        "--listen", "127.0.0.1:0", "--interval", interval, "--spool", "/nonexistent"});
    if (exporter->port() <= 0) std::abort();
    return exporter;
  }

  static std::string get(int port, const char* path) {
    RawClient client(port);
    client.send(std::string("GET ") + path + " HTTP/1.0\r\n\r\n");
    return client.read_to_close();
  }

  static std::size_t processes(int port) {
    std::string body = get(port, "/metrics");
    std::size_t count = 0;
    for (std::size_t at = 0;
         (at = body.find("\ngpumem_process_memory_used_bytes{", at)) != std::string::npos; ++at) {
      ++count;
    }
    return count;
  }

 private:
  gpumem::testing::SimGpu gpu_;
  std::vector<pid_t> workloads_;
  std::size_t expected_ = 0;
};

Node& node() {
  static Node instance;
  return instance;
}

void scrape(benchmark::State& state, const char* path) {
  auto exporter = node().start("10ms");
  int port = exporter->port();
  state.counters["processes"] = static_cast<double>(Node::processes(port));
  for (auto _ : state) {
    benchmark::DoNotOptimize(Node::get(port, path));
  }
}

// The baseline: a request that collects nothing, over the same loopback connection setup.
void BM_HelpPage(benchmark::State& state) {
  scrape(state, "/");
}
void BM_ScrapeMetrics(benchmark::State& state) {
  scrape(state, "/metrics");
}
// What the scrape asks the driver for, through the library, with no HTTP and no text: the part
// of a scrape's time that the (simulated) driver costs.
void BM_CollectThroughApi(benchmark::State& state) {
  node();
  std::size_t processes = 0;
  for (auto _ : state) {
    processes = 0;
    for (int i = 0; i < kGpus; ++i) {
      benchmark::DoNotOptimize(gpumem::gpu_mem_get_bytes(i));
      processes += gpumem::device_processes(i).size();
    }
  }
  state.counters["processes"] = static_cast<double>(processes);
}
BENCHMARK(BM_HelpPage)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CollectThroughApi)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ScrapeMetrics)->Unit(benchmark::kMillisecond)->UseRealTime();

// The process's CPU time (all its threads) to the nanosecond: /proc/PID/stat counts in ticks of
// the kernel's clock (10 ms), too coarse for figures near 1 % of a core over a few seconds.
double cpu_seconds(pid_t pid) {
  clockid_t clock;
  timespec used{};
  if (::clock_getcpuclockid(pid, &clock) != 0 || ::clock_gettime(clock, &used) != 0) return 0;
  return static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9;
}

// The exporter's CPU use while idle between scrapes, as a percentage of one core.
double exporter_cpu_percent(Node& on, const std::string& interval) {
  auto exporter = on.start(interval);
  pid_t pid = exporter->pid();
  std::this_thread::sleep_for(1s);  // past start-up
  double before = cpu_seconds(pid);
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(5s);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 100.0 * (cpu_seconds(pid) - before) / wall;
}
// The driver's part of a 10 ms tick, in a process of its own: this bench re-run as a reader that
// makes the exporter's sampler's calls (each GPU's used memory through
// gpu_mem_get_used_bytes_fast, as WindowPeak does) every 10 ms and nothing else; its CPU use as a
// percentage of one core, measured as the exporter's. The exporter's figure over this one is
// gpumem's own cost; what this one costs is the (simulated) driver's.
constexpr const char* kReaderFlag = "--nvml-reader";
[[noreturn]] void nvml_reader() {
  std::vector<gpumem::GpuHandle> gpus;
  for (int i = 0; i < kGpus; ++i) gpus.push_back(gpumem::gpu_handle(i));
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    for (const gpumem::GpuHandle& gpu : gpus) {
      benchmark::DoNotOptimize(gpumem::gpu_mem_get_used_bytes_fast(gpu));
    }
    next += 10ms;
    std::this_thread::sleep_until(next);
  }
}
double nvml_reader_cpu_percent() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/proc/self/exe", "gpumem_serve_bench", kReaderFlag, nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(1s);  // past start-up
  double before = cpu_seconds(pid);
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(5s);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double percent = 100.0 * (cpu_seconds(pid) - before) / wall;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return percent;
}

void exporter_cpu(benchmark::State& state, const std::string& interval) {
  Node& on = node();
  for (auto _ : state) state.counters["cpu_percent"] = exporter_cpu_percent(on, interval);
}
void BM_ExporterCpu_Interval1s(benchmark::State& state) {
  exporter_cpu(state, "1s");
}
void BM_ExporterCpu_Interval10ms(benchmark::State& state) {
  exporter_cpu(state, "10ms");
}
// The same GPUs without processes: the simulator's per-read scan of live processes is what
// makes a sample expensive above; here a sample costs what the exporter's own work costs.
void BM_ExporterCpu_Interval10ms_NoProcesses(benchmark::State& state) {
  node();
  std::string shared = std::getenv("GPUMEM_SIM_STATE");
  std::string idle = shared + ".idle";
  ::setenv("GPUMEM_SIM_STATE", idle.c_str(), 1);
  exporter_cpu(state, "10ms");
  ::setenv("GPUMEM_SIM_STATE", shared.c_str(), 1);
  std::remove(idle.c_str());
}
BENCHMARK(BM_ExporterCpu_Interval1s)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_ExporterCpu_Interval10ms)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_ExporterCpu_Interval10ms_NoProcesses)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// The sweep (issue 32): the exporter's CPU at 10 ms with 1, 8, 64 and 256 processes on the 8
// GPUs, each beside two baselines measured right after it in the same run: the same GPUs without
// processes, and the NVML reader above on the same GPUs and processes (what the driver's calls
// cost at that interval; `own_cpu_percent` is the exporter's figure less it). Last: each size has
// a node of its own, and the shared node's state is put back.
void BM_ExporterCpu_Interval10ms_Processes(benchmark::State& state) {
  const char* shared = std::getenv("GPUMEM_SIM_STATE");
  const std::string restore = shared != nullptr ? shared : "";
  const int processes = static_cast<int>(state.range(0));
  const int workloads = std::min(processes, kGpus);
  int forks = 0;
  while ((workloads << forks) < processes) ++forks;
  {
    Node sized(workloads, forks);
    const std::string own = std::getenv("GPUMEM_SIM_STATE");
    const std::string idle = own + ".idle";
    for (auto _ : state) {
      const double exporter = exporter_cpu_percent(sized, "10ms");
      const double reader = nvml_reader_cpu_percent();
      state.counters["cpu_percent"] = exporter;
      state.counters["nvml_reader_cpu_percent"] = reader;
      state.counters["own_cpu_percent"] = exporter - reader;
      ::setenv("GPUMEM_SIM_STATE", idle.c_str(), 1);
      state.counters["baseline_cpu_percent"] = exporter_cpu_percent(sized, "10ms");
      ::setenv("GPUMEM_SIM_STATE", own.c_str(), 1);
    }
    std::remove(idle.c_str());
    state.counters["processes"] = static_cast<double>(workloads << forks);
  }
  if (!restore.empty()) ::setenv("GPUMEM_SIM_STATE", restore.c_str(), 1);
}
BENCHMARK(BM_ExporterCpu_Interval10ms_Processes)
    ->ArgName("processes")
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Arg(256)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == kReaderFlag) nvml_reader();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
