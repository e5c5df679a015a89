// The simulated GPU a bench measures on: one H200 with no context memory, in a state file of the
// bench process's own, loaded through the same dlopen path as NVIDIA's libraries.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gpumem::bench {

// Points gpumem at the simulator in GPUMEM_SIM_DIR (call before anything loads a library).
// @return the state file, for the bench to remove when it ends.
inline std::string use_simulated_gpu(const std::string& bench_name) {
  const std::string sim = GPUMEM_SIM_DIR;
  std::string state =
      "/tmp/gpumem-bench-" + bench_name + "-" + std::to_string(::getpid()) + ".state";
  ::setenv("GPUMEM_SIM_STATE", state.c_str(), 1);
  ::setenv("GPUMEM_SIM_CONFIG", R"({"devices": [{"name": "NVIDIA H200", "context_mib": 0}]})", 1);
  ::setenv("GPUMEM_NVML_LIBRARY", (sim + "/libnvidia-ml.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", (sim + "/libcuda.so.1").c_str(), 1);
  ::setenv("GPUMEM_CUPTI_LIBRARY", (sim + "/libcupti.so.13").c_str(), 1);
  return state;
}

}  // namespace gpumem::bench
