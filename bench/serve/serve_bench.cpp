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
constexpr int kProcessesPerGpu = 8;  // three forks each: 2^3

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
  Node() : gpu_(eight_gpus()) {
    for (int i = 0; i < kGpus; ++i) {
      std::string script =
          "device " + std::to_string(i) + "; fork; fork; fork; alloc a 256MiB; sleep 600s";
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
    for (int i = 0; i < 300 && processes(exporter->port()) < kGpus * kProcessesPerGpu; ++i) {
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
void exporter_cpu(benchmark::State& state, const std::string& interval) {
  auto exporter = node().start(interval);
  pid_t pid = exporter->pid();
  std::this_thread::sleep_for(1s);  // past start-up
  for (auto _ : state) {
    double before = cpu_seconds(pid);
    auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(5s);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["cpu_percent"] = 100.0 * (cpu_seconds(pid) - before) / wall;
  }
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

}  // namespace

BENCHMARK_MAIN();
