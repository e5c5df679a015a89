// The simulated driver's pids, as NVIDIA documents the real one's: those of the host's pid
// namespace, whatever namespace the process runs in. Real namespaces where `unshare` is
// permitted; the configured translation (`nvml_pid_offset`) everywhere.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "driver/abi/nvml.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

struct Shell {
  int status = -1;
  std::string out;
};

// Runs `command` with sh; stderr joins stdout.
Shell shell(const std::string& command) {
  Shell result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) result.out += buffer;
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string quoted(const std::string& word) {
  return "'" + word + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool wait_for_text(const std::string& path, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (read_text(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct Listed {
  unsigned pid;
  unsigned long long used;
};

// NVML's compute processes on NVML device `index`, read in this process.
std::vector<Listed> nvml_processes(unsigned index) {
  static SimLibrary nvml{"libnvidia-ml.so.1"};
  EXPECT_EQ(nvml.get<PFN_nvmlInit_v2>("nvmlInit_v2")(), NVML_SUCCESS);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(
      nvml.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2")(index, &device),
      NVML_SUCCESS);
  const auto list =
      nvml.get<PFN_nvmlDeviceGetRunningProcesses>("nvmlDeviceGetComputeRunningProcesses_v3");
  std::vector<unsigned char> records(24 * 16);
  unsigned count = 16;
  EXPECT_EQ(list(device, &count, records.data()), NVML_SUCCESS);
  std::vector<Listed> listed;
  for (unsigned i = 0; i < count; ++i) {
    Listed process{};
    std::memcpy(&process.pid, records.data() + 24 * i, sizeof process.pid);
    std::memcpy(&process.used, records.data() + 24 * i + 8, sizeof process.used);
    listed.push_back(process);
  }
  return listed;
}

// The "NSpid:" line of a process: its pid in each namespace, the host's first.
std::string namespace_pids(unsigned pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("NSpid:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 6));
  }
  return {};
}

constexpr const char* kH200WithoutContext =
    R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 0}]})";

TEST(simPidNamespace, NvmlReportsEachPidThroughTheConfiguredTranslation) {
  SimGpu gpu(R"({"nvml_pid_offset": 1000, "devices": [{"name": "NVIDIA H200"}]})");
  SimLibrary cuda{"libcuda.so.1"};
  ASSERT_EQ(cuda.get<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(cuda.get<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&context, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(cuda.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(cuda.get<PFN_cuMemAlloc>("cuMemAlloc_v2")(&block, 64 * MiB), CUDA_SUCCESS);
  for (int reading = 0; reading < 2; ++reading) {  // and the process is not taken for dead
    const std::vector<Listed> listed = nvml_processes(0);
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].pid, static_cast<unsigned>(::getpid()) + 1000);
    EXPECT_EQ(listed[0].used, 64 * MiB);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string namespaces_refused() {
  const Shell probe = shell("unshare --mount --pid --fork --mount-proc true");
  return probe.status == 0 ? std::string() : "unshare is not permitted here: " + probe.out;
}

// `unshare --pid --fork` keeps the host's /proc: the process is pid 1 of its namespace, and the
// driver lists it by its host pid.
TEST(simPidNamespace, AProcessInANestedNamespaceIsListedByItsHostPid) {
  if (const std::string refused = namespaces_refused(); !refused.empty()) GTEST_SKIP() << refused;
  SimGpu gpu(kH200WithoutContext);
  const std::string folder =
      std::filesystem::temp_directory_path() / ("gpumem-sim-pidns-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const std::string out = folder + "/out", go = folder + "/go";
  const Shell started = shell("unshare --pid --fork " + quoted(sim_path("gpumem-sim")) +
                              " workload 'alloc a 10MiB; print ready; wait_for " + go + "' > " +
                              quoted(out) + " 2>&1 < /dev/null &");
  ASSERT_EQ(started.status, 0) << started.out;
  ASSERT_TRUE(wait_for_text(out, "ready")) << read_text(out);
  const std::vector<Listed> listed = nvml_processes(0);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].used, 10 * MiB);
  EXPECT_EQ(namespace_pids(listed[0].pid), std::to_string(listed[0].pid) + "\t1");
  std::ofstream(go) << "";
  std::filesystem::remove_all(folder);
}

// A container with a /proc of its own: given a procfs of the host's namespace, the simulated
// driver names its processes by their host pids, and a process inside does not take them for
// dead (their pids are not its namespace's).
TEST(simPidNamespace, InsideAContainerProcessesAreNamedByTheirHostPids) {
  if (const std::string refused = namespaces_refused(); !refused.empty()) GTEST_SKIP() << refused;
  SimGpu gpu(kH200WithoutContext);
  const std::string folder = std::filesystem::temp_directory_path() /
                             ("gpumem-sim-container-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder + "/host-proc");
  const std::string go = folder + "/go", out = folder + "/out";
  const std::string tool = quoted(sim_path("gpumem-sim"));
  const std::string script = folder + "/inside.sh";
  // `out` exists before the loop reads it: the background job's redirection may come later (a
  // "No such file" from grep on a loaded machine was once the shell's output).
  std::ofstream(script) << ": > " << out << "\n"
                        << tool << " workload 'alloc a 10MiB; print ready; wait_for " << go
                        << "' > " << out << " &\n"
                        << "while ! grep -q ready " << out << "; do sleep 0.01; done\n"
                        << tool << " show\ntouch " << go << "\nwait\n";
  const std::string host_proc = folder + "/host-proc";
  const Shell container = shell(
      "unshare --mount sh -c " +
      quoted("mount -t proc proc " + host_proc +
             " && exec unshare --pid --fork --mount-proc env GPUMEM_SIM_HOST_PROC=" + host_proc +
             " sh " + script));
  ASSERT_EQ(container.status, 0) << container.out;
  const auto state = nlohmann::json::parse(container.out, nullptr, false);
  ASSERT_FALSE(state.is_discarded()) << container.out;
  const auto& processes = state["devices"][0]["processes"];
  ASSERT_EQ(processes.size(), 1u) << container.out;
  EXPECT_GT(processes[0]["pid"].get<unsigned>(), 2u);  // not the namespace's own pid
  EXPECT_EQ(processes[0]["used_bytes"], 10 * MiB);
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace gpumem::testing
