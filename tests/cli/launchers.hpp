// The fake launchers of tests/cli/launchers (srun, mpirun, torchrun stand-ins) that the rank and
// report tests start gpumem under.
#pragma once

#include <string>

namespace gpumem::testing {

inline std::string launcher(const char* name) {
  return std::string(GPUMEM_TEST_LAUNCHERS) + "/" + name;
}

}  // namespace gpumem::testing
