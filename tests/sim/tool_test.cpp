// gpumem-sim: show / lose / recover / reset, and workload scripts (steps, fork, exit codes,
// errors), run as a separate program on the test's simulated GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "driver/abi/nvml.hpp"
#include "sim_libraries.hpp"
#include "tool/quantities.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

struct Result {
  int status;
  std::string out;
};

// Runs gpumem-sim with `arguments` (shell words); stderr joins stdout.
Result run_tool(const std::string& arguments) {
  const std::string command = sim_path("gpumem-sim") + " " + arguments + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  Result result{-1, ""};
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) result.out += buffer;
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

nlohmann::json show() {
  const Result r = run_tool("show");
  EXPECT_EQ(r.status, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(simTool, ShowDescribesTheConfiguredDevices) {
  SimGpu gpu;
  const nlohmann::json state = show();
  ASSERT_EQ(state["devices"].size(), 2u);
  EXPECT_EQ(state["devices"][1]["name"], "NVIDIA H200");
  EXPECT_EQ(state["devices"][1]["total_bytes"], 143771 * MiB);
  EXPECT_EQ(state["devices"][1]["reserved_bytes"], 542 * MiB);
  EXPECT_EQ(state["devices"][0]["pci_bus_id"], "00000000:3B:00.0");
  EXPECT_EQ(state["cuda_order"], nlohmann::json::array({1, 0}));
  EXPECT_EQ(state["devices"][0]["used_bytes"], 0);
}

TEST(simTool, WorkloadMemoryShowsWhileItRuns) {
  SimGpu gpu;
  const std::string command =
      sim_path("gpumem-sim") +
      " workload 'device 1; alloc a 64MiB; rt_alloc b 1M; vmm_alloc c 2M; managed_alloc d 1G;"
      " print ready; sleep 3s'";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, pipe), nullptr);
  EXPECT_STREQ(line, "ready\n");
  const nlohmann::json state = show();
  const auto& device = state["devices"][0];  // CUDA 1 = NVML 0
  EXPECT_EQ(device["used_bytes"], 67 * MiB);
  ASSERT_EQ(device["processes"].size(), 1u);
  EXPECT_EQ(device["processes"][0]["used_bytes"], 67 * MiB);
  EXPECT_EQ(state["devices"][1]["used_bytes"], 0);
  ::pclose(pipe);
  EXPECT_EQ(show()["devices"][0]["used_bytes"], 0);
}

TEST(simTool, ForkRunsTheRestTwice) {
  SimGpu gpu;
  const Result r = run_tool("workload 'alloc a 10M; fork; alloc b 5M; print twice; free b'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "twice\ntwice\n");
  EXPECT_EQ(show()["devices"][1]["used_bytes"], 0);
}

// A child forks again: the parent's driver locks, taken for the fork, are free in the child
// (a recursive mutex unlocked by the child's thread, a new id, stayed held and hung this).
TEST(simTool, AForkedChildForksAgain) {
  SimGpu gpu;
  const Result r = run_tool("workload 'alloc a 1M; fork; fork; fork; print eight'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "eight\neight\neight\neight\neight\neight\neight\neight\n");
}

TEST(simTool, ForkedChildOwnsNoneOfItsParentsMemory) {
  SimGpu gpu;
  const Result r = run_tool("workload 'alloc a 10M; fork; free a'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no live allocation named \"a\""), std::string::npos) << r.out;
}

TEST(simTool, ExitCodesAndSignals) {
  SimGpu gpu;
  EXPECT_EQ(run_tool("workload 'alloc a 1M; exit 3'").status, 3);
  EXPECT_EQ(run_tool("workload 'alloc a 1M; signal KILL'").status, 128 + 9);
  EXPECT_EQ(show()["devices"][1]["used_bytes"], 0);  // the killed one's memory is reclaimed
}

TEST(simTool, FailedStepReportsAndFails) {
  SimGpu gpu;
  Result r = run_tool("workload 'alloc a 1T'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("step 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out of memory"), std::string::npos) << r.out;
  EXPECT_EQ(run_tool("workload 'bogus'").status, 1);
  EXPECT_EQ(run_tool("workload 'free nothing'").status, 1);
  EXPECT_EQ(run_tool("workload 'alloc a 12XB'").status, 1);
  EXPECT_EQ(run_tool("workload 'device 7'").status, 1);
  EXPECT_EQ(run_tool("frobnicate").status, 2);
}

TEST(simTool, SpikeIsFreedAfterwards) {
  SimGpu gpu;
  const Result r = run_tool(
      "workload 'spike 1G 2ms; async_alloc x 1M; async_free x; vmm_alloc v 1M; vmm_free v'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(show()["devices"][1]["used_bytes"], 0);
}

// `pairs`: each allocation freed before the next, so the device held one block at most.
TEST(simTool, PairsHoldOneBlockAtATime) {
  SimGpu gpu;
  const nlohmann::json before = show();
  const int device = before["cuda_order"][0];  // CUDA device 0, which the workload uses
  const std::uint64_t used = before["devices"][device]["used_bytes"];
  const Result r = run_tool("workload 'pairs 1000 4MiB'");
  EXPECT_EQ(r.status, 0) << r.out;
  const nlohmann::json after = show();
  EXPECT_EQ(after["devices"][device]["used_bytes"], used);
  EXPECT_EQ(after["devices"][device]["used_peak_bytes"], used + (4u << 20));
  EXPECT_EQ(run_tool("workload 'pairs 0 4MiB'").status, 1);
  EXPECT_EQ(run_tool("workload 'pairs x 4MiB'").status, 1);
}

// Runs a workload whose checkpoints are "print N; wait_for <dir>/N": at each printed N the
// simulated devices' used bytes (NVML 0 and 1) and the workload's own bytes are read, then the
// workload goes on.
struct Checkpoint {
  std::uint64_t used0, used1, process0;
};
std::vector<Checkpoint> run_checkpointed(const std::string& script, int checkpoints) {
  const std::string dir =
      ::testing::TempDir() + "gpumem-sim-checkpoints-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string full = script;
  for (std::string::size_type at = 0; (at = full.find("@", at)) != std::string::npos;) {
    full.replace(at, 1, dir + "/");
  }
  const std::string command = sim_path("gpumem-sim") + " workload '" + full + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::vector<Checkpoint> seen;
  char line[512];
  for (int i = 0; i < checkpoints && pipe != nullptr; ++i) {
    if (std::fgets(line, sizeof line, pipe) == nullptr) break;
    EXPECT_EQ(std::string(line), std::to_string(i) + "\n");
    const nlohmann::json state = show();
    const auto& processes = state["devices"][0]["processes"];
    seen.push_back({state["devices"][0]["used_bytes"].get<std::uint64_t>(),
                    state["devices"][1]["used_bytes"].get<std::uint64_t>(),
                    processes.empty() ? 0 : processes[0]["used_bytes"].get<std::uint64_t>()});
    std::ofstream(dir + "/" + std::to_string(i)).put('\n');
  }
  std::string rest;
  while (pipe != nullptr && std::fgets(line, sizeof line, pipe) != nullptr) rest += line;
  const int status = pipe != nullptr ? ::pclose(pipe) : -1;
  EXPECT_EQ(status, 0) << rest;
  std::filesystem::remove_all(dir);
  return seen;
}

// The config of these: NVML 0 = CUDA 0, 300 MiB contexts.
constexpr const char* kContextGpus =
    R"({"devices": [{"name": "A", "context_mib": 300}, {"name": "B"}]})";

TEST(simTool, ContextAndModuleSteps) {
  SimGpu gpu(kContextGpus);
  const auto seen = run_checkpointed(
      "device 0; print 0; wait_for @0; ctx_create c; module_load m 3MiB; print 1; wait_for @1;"
      " module_use m; print 2; wait_for @2; module_unload m; ctx_destroy c; print 3; wait_for @3",
      4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].used0, 300 * MiB);
  EXPECT_EQ(seen[1].used0, 600 * MiB);  // lazy loading: the module waits for its first function
  EXPECT_EQ(seen[2].used0, 604 * MiB);
  EXPECT_EQ(seen[2].process0, 604 * MiB);
  EXPECT_EQ(seen[3].used0, 300 * MiB);
}

TEST(simTool, VmmSteps) {
  SimGpu gpu(kContextGpus);
  const auto seen = run_checkpointed(
      "device 0; vmm_create h 3MiB; vmm_reserve r 8MiB; vmm_map r 0 h; vmm_release h;"
      " print 0; wait_for @0; vmm_retain h2 r; vmm_unmap r 0 4MiB; print 1; wait_for @1;"
      " vmm_release h2; vmm_address_free r; print 2; wait_for @2",
      3);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].used0, 304 * MiB);  // released while mapped: held
  EXPECT_EQ(seen[1].used0, 304 * MiB);  // unmapped, but retained
  EXPECT_EQ(seen[2].used0, 300 * MiB);
}

TEST(simTool, PoolSteps) {
  SimGpu gpu(kContextGpus);
  const auto seen = run_checkpointed(
      "device 0; async_alloc a 5MiB; async_free a; print 0; wait_for @0; sync; print 1;"
      " wait_for @1; pool_threshold 4MiB; rt_async_alloc b 9MiB; rt_async_free b; ctx_sync;"
      " print 2; wait_for @2; pool_trim 0; print 3; wait_for @3",
      4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].used0, 306 * MiB);  // the freed block's reservation stays
  EXPECT_EQ(seen[1].used0, 300 * MiB);  // released above the threshold (0) at the sync
  EXPECT_EQ(seen[2].used0, 304 * MiB);  // the threshold is kept
  EXPECT_EQ(seen[3].used0, 300 * MiB);
}

TEST(simTool, GraphAndManagedSteps) {
  SimGpu gpu(kContextGpus);
  const auto seen = run_checkpointed(
      "device 0; graph g 5MiB; print 0; wait_for @0; graph_launch g; print 1; wait_for @1;"
      " graph_destroy g; graph_trim; graph k 1MiB keep; graph_launch k; graph_free k;"
      " managed_alloc m 8MiB; prefetch m; print 2; wait_for @2; prefetch_host m; graph_trim;"
      " print 3; wait_for @3",
      4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].used0, 300 * MiB);  // instantiated only
  EXPECT_EQ(seen[1].used0, 306 * MiB);  // the graph reservation, kept after the launch
  EXPECT_EQ(seen[2].used0, 310 * MiB);  // k's 2 MiB page + 8 MiB resident managed memory
  EXPECT_EQ(seen[3].used0, 300 * MiB);
}

TEST(simTool, LoseAndRecover) {
  SimGpu gpu;
  SimLibrary nvml("libnvidia-ml.so.1");
  ASSERT_EQ(nvml.get<PFN_nvmlInit_v2>("nvmlInit_v2")(), NVML_SUCCESS);
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(nvml.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2")(1, &device),
            NVML_SUCCESS);
  auto memory = nvml.get<PFN_nvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  nvmlMemory_t m{};
  ASSERT_EQ(run_tool("lose 1").status, 0);
  EXPECT_EQ(memory(device, &m), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(show()["devices"][1]["lost"], true);
  EXPECT_EQ(run_tool("workload 'device 0; alloc a 1M'").status, 1);  // CUDA 0 is NVML 1
  ASSERT_EQ(run_tool("recover 1").status, 0);
  EXPECT_EQ(memory(device, &m), NVML_SUCCESS);
  EXPECT_EQ(run_tool("lose 9").status, 2);
}

TEST(simTool, ResetWipesUsage) {
  SimGpu gpu;
  ASSERT_EQ(run_tool("lose 0").status, 0);
  ASSERT_EQ(run_tool("reset").status, 0);
  EXPECT_EQ(show()["devices"][0]["lost"], false);
}

TEST(simToolQuantities, Sizes) {
  using sim::tool::parse_size;
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("3MiB"), 3 * MiB);
  EXPECT_EQ(parse_size("1.5G"), 1536 * MiB);
  EXPECT_EQ(parse_size("2GiB"), 2048 * MiB);
  EXPECT_FALSE(parse_size("12XB"));
  EXPECT_FALSE(parse_size("MiB"));
  EXPECT_FALSE(parse_size("-1M"));
}

TEST(simToolQuantities, Durations) {
  using sim::tool::parse_duration;
  using namespace std::chrono_literals;
  EXPECT_EQ(parse_duration("250us"), std::chrono::nanoseconds(250us));
  EXPECT_EQ(parse_duration("3ms"), std::chrono::nanoseconds(3ms));
  EXPECT_EQ(parse_duration("1.5s"), std::chrono::nanoseconds(1500ms));
  EXPECT_FALSE(parse_duration("3"));
  EXPECT_FALSE(parse_duration("3h"));
}

}  // namespace
}  // namespace gpumem::testing
