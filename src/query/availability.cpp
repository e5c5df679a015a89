#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/diagnostics.hpp"

namespace gpumem {

bool nvml_available() noexcept {
  return driver::nvml().ready;
}

bool cuda_available() noexcept {
  return driver::cuda().loaded;
}

}  // namespace gpumem
