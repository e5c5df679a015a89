// gpumem-sim: show / lose / recover / reset, and workload scripts (steps, fork, exit codes,
// errors), run as a separate program on the test's simulated GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
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
