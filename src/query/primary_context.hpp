// The primary context of each device gpumem itself creates (preload, device_allocate).
#pragma once

#include "driver/abi/cuda.hpp"

namespace gpumem::detail {

// The device's primary context, retained on first use and kept: allocations come and go, and
// dropping the context with the last one would make the next one pay its creation again.
// Needs CUDA initialised; CUDA_SUCCESS or the driver's error.
abi::CUresult primary_context(int ordinal, abi::CUcontext& context) noexcept;

}  // namespace gpumem::detail
