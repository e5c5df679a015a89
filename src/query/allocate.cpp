#include "gpumem/allocate.hpp"

#include <utility>

#include "driver/cuda.hpp"
#include "gpumem/memory.hpp"
#include "identity/device_map.hpp"
#include "query/device_errors.hpp"
#include "query/primary_context.hpp"

namespace gpumem {

using namespace abi;

DeviceAllocation device_allocate(std::size_t bytes, int id) noexcept {
  if (driver::cuda_init() != CUDA_SUCCESS) return {};
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.memAlloc == nullptr || cuda.devicePrimaryCtxRetain == nullptr ||
      cuda.ctxSetCurrent == nullptr) {
    return {};
  }
  const int ordinal = id == current_device ? identity::current_ordinal() : id;
  int count = 0;
  if (ordinal < 0 || cuda.deviceGetCount(&count) != CUDA_SUCCESS || ordinal >= count) return {};
  // A failed allocation leaves the calling thread's current context as it found it.
  CUcontext previous = nullptr;
  const bool known = cuda.ctxGetCurrent != nullptr && cuda.ctxGetCurrent(&previous) == CUDA_SUCCESS;
  CUcontext context = nullptr;
  CUresult rc = detail::primary_context(ordinal, context);
  const bool switched = rc == CUDA_SUCCESS && context != previous;
  if (rc == CUDA_SUCCESS) rc = cuda.ctxSetCurrent(context);
  CUdeviceptr address = 0;
  if (rc == CUDA_SUCCESS) rc = cuda.memAlloc(&address, bytes);
  if (rc != CUDA_SUCCESS) {
    detail::note_cuda_failure(ordinal, "cuMemAlloc", rc);
    if (known && switched) cuda.ctxSetCurrent(previous);
    return {};
  }
  return DeviceAllocation(address, bytes, ordinal);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)),
      device_(std::exchange(other.device_, -1)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    reset();
    address_ = std::exchange(other.address_, 0);
    size_ = std::exchange(other.size_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

DeviceAllocation::~DeviceAllocation() {
  reset();
}

void DeviceAllocation::reset() noexcept {
  if (address_ == 0) return;
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.memFree != nullptr) {
    // Free in the allocating device's context, leaving the caller's current context as it was.
    CUcontext previous = nullptr;
    cuda.ctxGetCurrent(&previous);
    CUcontext owner = nullptr;
    const bool switched = detail::primary_context(device_, owner) == CUDA_SUCCESS &&
                          owner != previous && cuda.ctxSetCurrent(owner) == CUDA_SUCCESS;
    const CUresult rc = cuda.memFree(address_);
    if (rc != CUDA_SUCCESS) detail::note_cuda_failure(device_, "cuMemFree", rc);
    if (switched) cuda.ctxSetCurrent(previous);
  }
  address_ = 0;
  size_ = 0;
  device_ = -1;
}

}  // namespace gpumem
