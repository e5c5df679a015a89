// CUDA_INJECTION64_PATH: as the real driver does, cuInit loads the named library once and calls
// its `int InitializeInjection(void)`.
#pragma once

namespace gpumem::sim::cuda {

void run_injection_once();

}  // namespace gpumem::sim::cuda
