// Puts the calling test process on its own simulated GPU: a private state file, the given device
// config and faults, and gpumem's library variables pointing at the simulator. Each test runs in
// its own process (gtest_discover_tests), so gpumem's lazy loading sees these settings.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#ifndef GPUMEM_SIM_DIR
#error "GPUMEM_SIM_DIR must name the build's sim/ folder"
#endif

namespace gpumem::testing {

inline std::string sim_path(const std::string& file) {
  return std::string(GPUMEM_SIM_DIR) + "/" + file;
}

// Two devices whose CUDA order differs from NVML's, with round numbers for assertions.
inline constexpr const char* kTwoGpus = R"({
  "driver_version": "580.95.05",
  "cuda_order": [1, 0],
  "devices": [
    {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
     "pci_bus_id": "00000000:3B:00.0", "total_mib": 40960, "reserved_mib": 256, "context_mib": 0},
    {"name": "NVIDIA H200", "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001",
     "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}
  ]})";

class SimGpu {
 public:
  explicit SimGpu(const std::string& config = kTwoGpus, const std::string& faults = "") {
    static std::atomic<int> sequence{0};
    state_ =
        (std::filesystem::temp_directory_path() / ("gpumem-test-" + std::to_string(::getpid()) +
                                                   "-" + std::to_string(sequence++) + ".state"))
            .string();
    // A state file left by an earlier run under the same pid must not leak its devices' state.
    std::filesystem::remove(state_);
    ::setenv("GPUMEM_SIM_STATE", state_.c_str(), 1);
    ::setenv("GPUMEM_SIM_CONFIG", config.c_str(), 1);
    if (faults.empty()) {
      ::unsetenv("GPUMEM_SIM_FAULTS");
    } else {
      ::setenv("GPUMEM_SIM_FAULTS", faults.c_str(), 1);
    }
    ::setenv("GPUMEM_NVML_LIBRARY", sim_path("libnvidia-ml.so.1").c_str(), 1);
    ::setenv("GPUMEM_CUDA_LIBRARY", sim_path("libcuda.so.1").c_str(), 1);
    ::setenv("GPUMEM_CUPTI_LIBRARY", sim_path("libcupti.so.13").c_str(), 1);
  }
  ~SimGpu() { std::filesystem::remove(state_); }
  SimGpu(const SimGpu&) = delete;
  SimGpu& operator=(const SimGpu&) = delete;

  const std::string& state_file() const { return state_; }

  // A device lost mid-run (every process sharing the state sees it).
  void set_lost(unsigned nvml_index, bool lost) {
    void* nvml = ::dlopen(sim_path("libnvidia-ml.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (nvml == nullptr) throw std::runtime_error("cannot load the simulated NVML");
    using SetLost = int (*)(unsigned, int);
    auto set = reinterpret_cast<SetLost>(::dlsym(nvml, "gpumemSimSetLost"));
    if (set == nullptr || set(nvml_index, lost ? 1 : 0) != 0) {
      throw std::runtime_error("gpumemSimSetLost failed");
    }
    ::dlclose(nvml);
  }

 private:
  std::string state_;
};

inline constexpr std::uint64_t MiB = 1ull << 20;
// n MiB as the signed byte counts the peak engine and its readings use.
constexpr std::int64_t mib(std::int64_t n) {
  return n * static_cast<std::int64_t>(MiB);
}

}  // namespace gpumem::testing
