// The simulated CUDA driver's virtual memory management, with the lifetimes the Driver API
// reference gives:
// - cuMemGetAllocationGranularity: kPageBytes (2 MiB), minimum and recommended;
// - cuMemCreate: physical memory on prop->location.id, size a multiple of the granularity; the
//   handle holds one reference; cuMemRetainAllocationHandle (from a mapped address) adds one;
// - cuMemAddressReserve / cuMemAddressFree: virtual ranges, no memory;
// - cuMemMap: a handle into a reserved, unmapped range (offset 0, as the reference requires);
//   cuMemUnmap must cover whole mappings (one range may cover several);
// - cuMemRelease drops a reference: "the memory is freed only when every mapping is unmapped and
//   every reference released" — releasing while mapped is legal (vectorAddMMAP does it).
#include <map>

#include "core/export.hpp"
#include "process.hpp"
#include "trace_hook.hpp"

using namespace gpumem::abi;
namespace cuda = gpumem::sim::cuda;
using cuda::traced;

namespace gpumem::sim::cuda {
namespace {

struct Handle {
  unsigned nvml;
  std::uint64_t bytes;
  int references;
  int mappings;
};
struct Mapping {
  std::uint64_t bytes;
  CUmemGenericAllocationHandle handle;
};

struct Vmm {
  std::mutex mutex;
  std::map<CUmemGenericAllocationHandle, Handle> handles;
  std::map<std::uint64_t, std::uint64_t> reservations;  // base → bytes
  std::map<std::uint64_t, Mapping> mappings;            // base → mapping
  CUmemGenericAllocationHandle next_handle = 0x10000;
};
Vmm& vmm() {
  static Vmm* v = new Vmm;
  return *v;
}

bool aligned(std::uint64_t value) {
  return value % kPageBytes == 0;
}

// Frees the physical memory once nothing holds it. Under the VMM lock.
void maybe_free(std::map<CUmemGenericAllocationHandle, Handle>::iterator it) {
  if (it->second.references > 0 || it->second.mappings > 0) return;
  state().uncharge(it->second.nvml, it->second.bytes);
  vmm().handles.erase(it);
}

// The mapping holding `address`, or end(). Under the VMM lock.
std::map<std::uint64_t, Mapping>::iterator mapping_at(std::uint64_t address) {
  auto& mappings = vmm().mappings;
  auto it = mappings.upper_bound(address);
  if (it == mappings.begin()) return mappings.end();
  --it;
  return address < it->first + it->second.bytes ? it : mappings.end();
}

// [ptr, ptr + bytes) lies in one reservation. Under the VMM lock.
bool reserved(std::uint64_t ptr, std::uint64_t bytes) {
  auto& reservations = vmm().reservations;
  auto it = reservations.upper_bound(ptr);
  if (it == reservations.begin()) return false;
  --it;
  return ptr + bytes <= it->first + it->second;
}

CUresult check_location(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->locationType != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->locationId < 0 || prop->locationId >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult create(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                const CUmemAllocationProp* prop, unsigned long long flags) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr || bytes == 0 || !aligned(bytes) || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = check_location(prop)) return rc;
  const unsigned nvml = nvml_index(prop->locationId);
  if (state().lost(nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  if (!state().charge(nvml, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  *handle = v.next_handle++;
  v.handles.emplace(*handle, Handle{nvml, bytes, 1, 0});
  return CUDA_SUCCESS;
}

CUresult release_handle(CUmemGenericAllocationHandle handle) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto it = v.handles.find(handle);
  if (it == v.handles.end() || it->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  --it->second.references;
  maybe_free(it);
  return CUDA_SUCCESS;
}

CUresult reserve(CUdeviceptr* ptr, std::size_t bytes, std::size_t alignment,
                 unsigned long long flags) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ptr == nullptr || bytes == 0 || !aligned(bytes) || flags != 0 ||
      (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *ptr = new_address_range(bytes, std::max<std::uint64_t>(alignment, kPageBytes));
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  v.reservations.emplace(*ptr, bytes);
  return CUDA_SUCCESS;
}

// A sim choice (the reference does not say): a range that still has mappings is not freed.
CUresult free_range(CUdeviceptr ptr, std::size_t bytes) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto it = v.reservations.find(ptr);
  if (it == v.reservations.end() || it->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  const auto first = v.mappings.lower_bound(ptr);
  if (first != v.mappings.end() && first->first < ptr + bytes) return CUDA_ERROR_INVALID_VALUE;
  v.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult map(CUdeviceptr ptr, std::size_t bytes, std::size_t offset,
             CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bytes == 0 || !aligned(ptr) || !aligned(bytes) || offset != 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto h = v.handles.find(handle);
  if (h == v.handles.end() || h->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  if (offset + bytes > h->second.bytes || !reserved(ptr, bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (state().lost(h->second.nvml)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  // Only unmapped parts of a reservation can be mapped.
  const auto next = v.mappings.lower_bound(ptr);
  if (next != v.mappings.end() && next->first < ptr + bytes) return CUDA_ERROR_INVALID_VALUE;
  if (mapping_at(ptr) != v.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  v.mappings.emplace(ptr, Mapping{bytes, handle});
  ++h->second.mappings;
  return CUDA_SUCCESS;
}

// The range must start at a mapping and cover every mapping it touches whole.
CUresult unmap(CUdeviceptr ptr, std::size_t bytes) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto first = v.mappings.find(ptr);
  if (first == v.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  auto last = first;
  for (; last != v.mappings.end() && last->first < ptr + bytes; ++last) {
    if (last->first + last->second.bytes > ptr + bytes) return CUDA_ERROR_INVALID_VALUE;
  }
  for (auto it = first; it != last;) {
    const auto h = v.handles.find(it->second.handle);
    it = v.mappings.erase(it);
    if (h == v.handles.end()) continue;
    --h->second.mappings;
    maybe_free(h);
  }
  return CUDA_SUCCESS;
}

// Every byte of the range must be mapped.
CUresult set_access(CUdeviceptr ptr, std::size_t bytes, const CUmemAccessDesc* desc,
                    std::size_t count) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bytes == 0 || desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
    if (desc[i].location.id < 0 || desc[i].location.id >= device_count())
      return CUDA_ERROR_INVALID_DEVICE;
  }
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  std::uint64_t at = ptr;
  while (at < ptr + bytes) {
    const auto it = mapping_at(at);
    if (it == v.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    at = it->first + it->second.bytes;
  }
  return CUDA_SUCCESS;
}

CUresult retain(CUmemGenericAllocationHandle* handle, void* address) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto it = mapping_at(reinterpret_cast<std::uint64_t>(address));
  if (it == v.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  const auto h = v.handles.find(it->second.handle);
  if (h == v.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  ++h->second.references;
  *handle = it->second.handle;
  return CUDA_SUCCESS;
}

}  // namespace

bool find_mapping(std::uint64_t address, std::uint64_t* base, std::uint64_t* bytes) {
  Vmm& v = vmm();
  std::lock_guard lock(v.mutex);
  const auto it = mapping_at(address);
  if (it == v.mappings.end()) return false;
  *base = it->first;
  *bytes = it->second.bytes;
  return true;
}

void vmm_after_fork() {
  Vmm& v = vmm();
  v.handles.clear();
  v.mappings.clear();
  v.reservations.clear();
}

}  // namespace gpumem::sim::cuda

GPUMEM_SIM_EXPORT CUresult cuMemGetAllocationGranularity(std::size_t* granularity,
                                                         const CUmemAllocationProp* prop,
                                                         int option) {
  const cuMemGetAllocationGranularity_params params{granularity, prop, option};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationGranularity,
                "cuMemGetAllocationGranularity", params, [&]() -> CUresult {
                  if (!cuda::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
                  if (granularity == nullptr || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                                 option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) {
                    return CUDA_ERROR_INVALID_VALUE;
                  }
                  if (const CUresult rc = cuda::check_location(prop)) return rc;
                  *granularity = cuda::kPageBytes;
                  return CUDA_SUCCESS;
                });
}

GPUMEM_SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                                       const CUmemAllocationProp* prop, unsigned long long flags) {
  const cuMemCreate_params params{handle, bytes, prop, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate", params,
                [&] { return cuda::create(handle, bytes, prop, flags); });
}

GPUMEM_SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const cuMemRelease_params params{handle};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, "cuMemRelease", params,
                [&] { return cuda::release_handle(handle); });
}

GPUMEM_SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, std::size_t bytes,
                                               std::size_t alignment, CUdeviceptr address,
                                               unsigned long long flags) {
  const cuMemAddressReserve_params params{ptr, bytes, alignment, address, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, "cuMemAddressReserve", params,
                [&] { return cuda::reserve(ptr, bytes, alignment, flags); });
}

GPUMEM_SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, std::size_t bytes) {
  const cuMemAddressFree_params params{ptr, bytes};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, "cuMemAddressFree", params,
                [&] { return cuda::free_range(ptr, bytes); });
}

GPUMEM_SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, std::size_t bytes, std::size_t offset,
                                    CUmemGenericAllocationHandle handle, unsigned long long flags) {
  const cuMemMap_params params{ptr, bytes, offset, handle, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap", params,
                [&] { return cuda::map(ptr, bytes, offset, handle, flags); });
}

GPUMEM_SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, std::size_t bytes) {
  const cuMemUnmap_params params{ptr, bytes};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, "cuMemUnmap", params,
                [&] { return cuda::unmap(ptr, bytes); });
}

GPUMEM_SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, std::size_t bytes,
                                          const CUmemAccessDesc* desc, std::size_t count) {
  const cuMemSetAccess_params params{ptr, bytes, desc, count};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess, "cuMemSetAccess", params,
                [&] { return cuda::set_access(ptr, bytes, desc, count); });
}

GPUMEM_SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                       void* address) {
  const cuMemRetainAllocationHandle_params params{handle, address};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle",
                params, [&] { return cuda::retain(handle, address); });
}
