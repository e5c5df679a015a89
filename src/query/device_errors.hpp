// Turning a failed driver call on a device into the diagnostic a user can act on.
#pragma once

#include "driver/abi/cuda.hpp"
#include "driver/abi/nvml.hpp"

namespace gpumem::detail {

// "GPU 1 lost (NVML_ERROR_GPU_IS_LOST)", "GPU 0: memory info failed (NVML_ERROR_…)"; nothing for
// an NVML that never loaded (that was recorded when loading failed).
void note_nvml_failure(int ordinal, const char* what, abi::nvmlReturn_t code);
// "GPU 0: cuMemAlloc failed (CUDA_ERROR_OUT_OF_MEMORY)".
void note_cuda_failure(int ordinal, const char* what, abi::CUresult code);

}  // namespace gpumem::detail
