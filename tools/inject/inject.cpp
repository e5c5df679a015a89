// libgpumem_inject.so: loaded by the CUDA driver into every CUDA process of a command measured by
// `gpumem run` (CUDA_INJECTION64_PATH), it joins the process to the run. What joining does, from
// the counters file to the exact ledger, is the library's (gpumem/internal/run_process.hpp).
#include "gpumem/internal/run_process.hpp"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  gpumem::run::join_run();
  return 1;  // the driver goes on whatever the run made of this process
}
