#include "query/device_errors.hpp"

#include <string>

#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::detail {

void note_nvml_failure(int ordinal, const char* what, abi::nvmlReturn_t code) {
  if (!driver::nvml().ready) return;
  try {
    const std::string gpu = "GPU " + std::to_string(ordinal);
    if (code == abi::NVML_ERROR_GPU_IS_LOST) {
      support::record_diagnostic(gpu + " lost (NVML_ERROR_GPU_IS_LOST)");
    } else {
      support::record_diagnostic(gpu + ": " + what + " failed (" + driver::nvml_error_name(code) +
                                 ")");
    }
  } catch (...) {
  }
}

void note_cuda_failure(int ordinal, const char* what, abi::CUresult code) {
  try {
    const std::string gpu = "GPU " + std::to_string(ordinal);
    if (code == abi::CUDA_ERROR_DEVICE_UNAVAILABLE) {
      support::record_diagnostic(gpu + " lost (CUDA_ERROR_DEVICE_UNAVAILABLE)");
    } else {
      support::record_diagnostic(gpu + ": " + what + " failed (" + driver::cuda_error_name(code) +
                                 ")");
    }
  } catch (...) {
  }
}

}  // namespace gpumem::detail
