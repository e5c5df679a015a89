// `gpumem-sim workload 'SCRIPT'`: an ordinary CUDA program made of steps (see
// docs/simulator.md), so that gpumem can observe or inject into it like any other.
#pragma once

#include <string>

namespace gpumem::sim::tool {

// Runs the script; returns the process exit status (errors are reported on stderr).
int run_workload(const std::string& script);

}  // namespace gpumem::sim::tool
