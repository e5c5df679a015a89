#include "query/primary_context.hpp"

#include <mutex>
#include <utility>
#include <vector>

#include "driver/cuda.hpp"

namespace gpumem::detail {

using namespace abi;

CUresult primary_context(int ordinal, CUcontext& context) noexcept {
  static auto* mutex = new std::mutex;
  static auto* retained = new std::vector<std::pair<int, CUcontext>>;
  std::lock_guard lock(*mutex);
  for (const auto& [device_ordinal, ctx] : *retained) {
    if (device_ordinal == ordinal) {
      context = ctx;
      return CUDA_SUCCESS;
    }
  }
  const driver::Cuda& cuda = driver::cuda();
  CUdevice device = 0;
  CUresult rc = cuda.deviceGet(&device, ordinal);
  if (rc == CUDA_SUCCESS) rc = cuda.devicePrimaryCtxRetain(&context, device);
  if (rc != CUDA_SUCCESS) return rc;
  try {
    retained->emplace_back(ordinal, context);
  } catch (...) {
    // Unrecorded, the context is retained again next time: a reference count, nothing worse.
  }
  return CUDA_SUCCESS;
}

}  // namespace gpumem::detail
