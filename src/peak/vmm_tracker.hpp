// The exact source's VMM bookkeeping. Physical memory made by cuMemCreate lives until every
// reference to its handle is released (cuMemRelease; cuMemRetainAllocationHandle adds one) AND
// every mapping of it is unmapped (cuMemUnmap): releasing while mapped is legal and common
// (CUDA's vectorAddMMAP sample, PyTorch's expandable segments). Counted into the device's exact
// channel from creation until then.
//
// ENTER/EXIT: what a release or an unmap refers to is taken at ENTER, while the driver has not
// yet freed it (after that another thread may be handed the same handle value or addresses), and
// applied at EXIT if the call succeeded.
#pragma once

#include <cstdint>

#include "driver/abi/cuda.hpp"

namespace gpumem::peak::vmm {

void created(abi::CUmemGenericAllocationHandle handle, std::uint64_t bytes, int device);
void retained(abi::CUmemGenericAllocationHandle handle);  // one more reference
void mapped(abi::CUdeviceptr address, std::uint64_t bytes,
            abi::CUmemGenericAllocationHandle handle);

void releasing(abi::CUmemGenericAllocationHandle handle);       // ENTER of cuMemRelease
void released(bool succeeded);                                  // its EXIT
void unmapping(abi::CUdeviceptr address, std::uint64_t bytes);  // ENTER of cuMemUnmap
void unmapped(bool succeeded);                                  // its EXIT

void clear();

}  // namespace gpumem::peak::vmm
