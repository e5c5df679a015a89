// Virtual memory management with the Driver API's lifetime rules: 2 MiB granularity, physical
// memory freed only when every reference is released and every mapping unmapped (releasing while
// mapped, as vectorAddMMAP does, keeps it), cuMemRetainAllocationHandle adding a reference, unmaps
// covering whole mappings, and the driver-domain callbacks with their real params.
#include <gtest/gtest.h>

#include "sim_driver.hpp"

namespace gpumem::testing {
namespace {

using Granularity = CUresult (*)(std::size_t*, const CUmemAllocationProp*, int);
using Reserve = CUresult (*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr,
                             unsigned long long);
using AddressFree = CUresult (*)(CUdeviceptr, std::size_t);
using SetAccess = CUresult (*)(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t);

struct Vmm : Driver {
  Vmm() { use(1); }  // CUDA 1 = NVML 0 in kTwoGpus
  CUmemAllocationProp prop(int ordinal = 1) const {
    CUmemAllocationProp p{};
    p.type = 1;
    p.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
    p.locationId = ordinal;
    return p;
  }
  CUmemGenericAllocationHandle create(std::size_t bytes) {
    const CUmemAllocationProp p = prop();
    CUmemGenericAllocationHandle handle = 0;
    EXPECT_EQ(fn<PFN_cuMemCreate>("cuMemCreate")(&handle, bytes, &p, 0), CUDA_SUCCESS);
    return handle;
  }
  CUdeviceptr reserve(std::size_t bytes) {
    CUdeviceptr ptr = 0;
    EXPECT_EQ(fn<Reserve>("cuMemAddressReserve")(&ptr, bytes, 0, 0, 0), CUDA_SUCCESS);
    return ptr;
  }
  CUresult map(CUdeviceptr ptr, std::size_t bytes, CUmemGenericAllocationHandle handle,
               std::size_t offset = 0) {
    return fn<PFN_cuMemMap>("cuMemMap")(ptr, bytes, offset, handle, 0);
  }
  CUresult unmap(CUdeviceptr ptr, std::size_t bytes) {
    return fn<PFN_cuMemUnmap>("cuMemUnmap")(ptr, bytes);
  }
  CUresult release(CUmemGenericAllocationHandle handle) {
    return fn<PFN_cuMemRelease>("cuMemRelease")(handle);
  }
  // NVML's device and per-process figures and cuMemGetInfo agree (reserved 256 MiB aside).
  void expect_used(std::uint64_t bytes) {
    EXPECT_EQ(nvml_used(0), bytes);
    EXPECT_EQ(process_used(0), bytes);
    EXPECT_EQ(cuda_used(), bytes + 256 * MiB);
  }
};

TEST(simVmm, GranularityIsTwoMiB) {
  SimGpu gpu;
  Vmm v;
  const CUmemAllocationProp p = v.prop();
  std::size_t granularity = 0;
  ASSERT_EQ(v.fn<Granularity>("cuMemGetAllocationGranularity")(&granularity, &p,
                                                               CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, 2 * MiB);
  ASSERT_EQ(v.fn<Granularity>("cuMemGetAllocationGranularity")(
                &granularity, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, 2 * MiB);
  EXPECT_EQ(v.fn<Granularity>("cuMemGetAllocationGranularity")(&granularity, &p, 7),
            CUDA_ERROR_INVALID_VALUE);
  // cuMemCreate's size must be a multiple of it.
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(v.fn<PFN_cuMemCreate>("cuMemCreate")(&handle, MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v.fn<PFN_cuMemCreate>("cuMemCreate")(&handle, 3 * MiB, &p, 0),
            CUDA_ERROR_INVALID_VALUE);
  v.expect_used(0);
}

TEST(simVmm, ReleaseWhileMappedKeepsMemoryUntilUnmap) {
  SimGpu gpu;
  Vmm v;
  // vectorAddMMAP: create, reserve, map, set access, release, ... use ..., unmap, free the range.
  const CUmemGenericAllocationHandle handle = v.create(4 * MiB);
  v.expect_used(4 * MiB);
  const CUdeviceptr ptr = v.reserve(8 * MiB);
  v.expect_used(4 * MiB);  // a reservation is only addresses
  ASSERT_EQ(v.map(ptr, 4 * MiB, handle), CUDA_SUCCESS);
  CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 1}, 3};
  ASSERT_EQ(v.fn<SetAccess>("cuMemSetAccess")(ptr, 4 * MiB, &access, 1), CUDA_SUCCESS);
  EXPECT_EQ(v.fn<SetAccess>("cuMemSetAccess")(ptr, 8 * MiB, &access, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(v.release(handle), CUDA_SUCCESS);
  v.expect_used(4 * MiB);                                  // still mapped: still held
  EXPECT_EQ(v.release(handle), CUDA_ERROR_INVALID_VALUE);  // no reference left to release
  CUdeviceptr base = 0;
  std::size_t size = 0;
  ASSERT_EQ(v.fn<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2")(&base, &size, ptr + MiB),
            CUDA_SUCCESS);
  EXPECT_EQ(base, ptr);
  EXPECT_EQ(size, 4 * MiB);
  ASSERT_EQ(v.unmap(ptr, 4 * MiB), CUDA_SUCCESS);
  v.expect_used(0);
  ASSERT_EQ(v.fn<AddressFree>("cuMemAddressFree")(ptr, 8 * MiB), CUDA_SUCCESS);
}

TEST(simVmm, RetainAddsAReference) {
  SimGpu gpu;
  Vmm v;
  const CUmemGenericAllocationHandle handle = v.create(2 * MiB);
  const CUdeviceptr ptr = v.reserve(2 * MiB);
  ASSERT_EQ(v.map(ptr, 2 * MiB, handle), CUDA_SUCCESS);
  CUmemGenericAllocationHandle retained = 0;
  // Any address inside the mapping will do.
  ASSERT_EQ(v.fn<PFN_cuMemRetainAllocationHandle>("cuMemRetainAllocationHandle")(
                &retained, reinterpret_cast<void*>(ptr + 4096)),
            CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  ASSERT_EQ(v.release(handle), CUDA_SUCCESS);
  ASSERT_EQ(v.unmap(ptr, 2 * MiB), CUDA_SUCCESS);
  v.expect_used(2 * MiB);  // unmapped, but one reference is left
  ASSERT_EQ(v.release(retained), CUDA_SUCCESS);
  v.expect_used(0);
  EXPECT_EQ(v.fn<PFN_cuMemRetainAllocationHandle>("cuMemRetainAllocationHandle")(
                &retained, reinterpret_cast<void*>(ptr)),
            CUDA_ERROR_INVALID_VALUE);  // nothing mapped there any more
}

TEST(simVmm, UnmapCoversWholeMappings) {
  SimGpu gpu;
  Vmm v;
  const CUmemGenericAllocationHandle big = v.create(4 * MiB);
  const CUmemGenericAllocationHandle small = v.create(2 * MiB);
  const CUdeviceptr ptr = v.reserve(8 * MiB);
  ASSERT_EQ(v.map(ptr, 4 * MiB, big), CUDA_SUCCESS);
  ASSERT_EQ(v.map(ptr + 4 * MiB, 2 * MiB, small), CUDA_SUCCESS);
  // One handle may be mapped twice; each mapping holds it.
  ASSERT_EQ(v.map(ptr + 6 * MiB, 2 * MiB, small), CUDA_SUCCESS);
  ASSERT_EQ(v.release(big), CUDA_SUCCESS);
  ASSERT_EQ(v.release(small), CUDA_SUCCESS);
  v.expect_used(6 * MiB);
  EXPECT_EQ(v.unmap(ptr, 2 * MiB), CUDA_ERROR_INVALID_VALUE);            // part of a mapping
  EXPECT_EQ(v.unmap(ptr + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  // not a mapping's start
  EXPECT_EQ(v.unmap(ptr, 5 * MiB), CUDA_ERROR_INVALID_VALUE);            // ends inside one
  v.expect_used(6 * MiB);
  ASSERT_EQ(v.unmap(ptr, 6 * MiB), CUDA_SUCCESS);  // two mappings at once
  v.expect_used(2 * MiB);                          // small is still mapped at ptr + 6 MiB
  ASSERT_EQ(v.unmap(ptr + 6 * MiB, 2 * MiB), CUDA_SUCCESS);
  v.expect_used(0);
}

TEST(simVmm, MappingRules) {
  SimGpu gpu;
  Vmm v;
  const CUmemGenericAllocationHandle handle = v.create(4 * MiB);
  const CUdeviceptr ptr = v.reserve(4 * MiB);
  EXPECT_EQ(v.map(ptr + 4 * MiB, 2 * MiB, handle), CUDA_ERROR_INVALID_VALUE);  // not reserved
  EXPECT_EQ(v.map(ptr, 8 * MiB, handle), CUDA_ERROR_INVALID_VALUE);  // beyond the reservation
  EXPECT_EQ(v.map(ptr, 2 * MiB, handle, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  // offset must be 0
  EXPECT_EQ(v.map(ptr, MiB, handle), CUDA_ERROR_INVALID_VALUE);  // not a granularity multiple
  ASSERT_EQ(v.map(ptr, 2 * MiB, handle), CUDA_SUCCESS);
  EXPECT_EQ(v.map(ptr, 2 * MiB, handle), CUDA_ERROR_INVALID_VALUE);  // already mapped
  // A reservation with mappings is not freed (a sim choice), nor one named by a wrong size.
  EXPECT_EQ(v.fn<AddressFree>("cuMemAddressFree")(ptr, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(v.unmap(ptr, 2 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(v.fn<AddressFree>("cuMemAddressFree")(ptr, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(v.fn<AddressFree>("cuMemAddressFree")(ptr, 4 * MiB), CUDA_SUCCESS);
  ASSERT_EQ(v.release(handle), CUDA_SUCCESS);
  EXPECT_EQ(v.map(ptr, 2 * MiB, handle), CUDA_ERROR_INVALID_VALUE);  // released handle
  v.expect_used(0);
}

TEST(simVmm, NoContextNeeded) {
  SimGpu gpu;
  Driver d;
  ASSERT_EQ(d.fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  CUmemAllocationProp p{};
  p.type = 1;
  p.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  p.locationId = 0;  // NVML 1
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(d.fn<PFN_cuMemCreate>("cuMemCreate")(&handle, 6 * MiB, &p, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(1), 6 * MiB);
  EXPECT_EQ(d.process_used(1), 6 * MiB);
  ASSERT_EQ(d.fn<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(1), 0u);
}

struct Call {
  CUpti_CallbackId cbid;
  int site;
  CUdeviceptr ptr;
  std::size_t size;
  CUmemGenericAllocationHandle handle;
};

void record(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* raw) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* data = static_cast<const CUpti_CallbackData*>(raw);
  Call c{cbid, data->callbackSite, 0, 0, 0};
  const void* p = data->functionParams;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto* m = static_cast<const cuMemMap_params*>(p);
      c = {cbid, data->callbackSite, m->ptr, m->size, m->handle};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto* m = static_cast<const cuMemUnmap_params*>(p);
      c = {cbid, data->callbackSite, m->ptr, m->size, 0};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve: {
      const auto* m = static_cast<const cuMemAddressReserve_params*>(p);
      c = {cbid, data->callbackSite, data->callbackSite == CUPTI_API_EXIT ? *m->ptr : 0, m->size,
           0};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle: {
      const auto* m = static_cast<const cuMemRetainAllocationHandle_params*>(p);
      c = {cbid, data->callbackSite, reinterpret_cast<CUdeviceptr>(m->addr), 0,
           data->callbackSite == CUPTI_API_EXIT ? *m->handle : 0};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      c.handle = static_cast<const cuMemRelease_params*>(p)->handle;
      break;
    default:
      break;
  }
  static_cast<std::vector<Call>*>(userdata)->push_back(c);
}

TEST(simVmm, EveryCallFiresItsCallback) {
  SimGpu gpu;
  Vmm v;
  SimLibrary cupti("libcupti.so.13");
  std::vector<Call> calls;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.get<PFN_cuptiSubscribe>("cuptiSubscribe")(&s, &record, &calls), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiEnableDomain>("cuptiEnableDomain")(1, s, CUPTI_CB_DOMAIN_DRIVER_API),
            CUPTI_SUCCESS);
  const CUmemAllocationProp p = v.prop();
  std::size_t granularity = 0;
  ASSERT_EQ(v.fn<Granularity>("cuMemGetAllocationGranularity")(&granularity, &p, 0), CUDA_SUCCESS);
  const CUmemGenericAllocationHandle handle = v.create(2 * MiB);
  const CUdeviceptr ptr = v.reserve(2 * MiB);
  ASSERT_EQ(v.map(ptr, 2 * MiB, handle), CUDA_SUCCESS);
  CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 1}, 3};
  ASSERT_EQ(v.fn<SetAccess>("cuMemSetAccess")(ptr, 2 * MiB, &access, 1), CUDA_SUCCESS);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(v.fn<PFN_cuMemRetainAllocationHandle>("cuMemRetainAllocationHandle")(
                &retained, reinterpret_cast<void*>(ptr)),
            CUDA_SUCCESS);
  ASSERT_EQ(v.release(handle), CUDA_SUCCESS);
  ASSERT_EQ(v.release(retained), CUDA_SUCCESS);
  ASSERT_EQ(v.unmap(ptr, 2 * MiB), CUDA_SUCCESS);
  ASSERT_EQ(v.fn<AddressFree>("cuMemAddressFree")(ptr, 2 * MiB), CUDA_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiUnsubscribe>("cuptiUnsubscribe")(s), CUPTI_SUCCESS);

  std::vector<CUpti_CallbackId> exits;
  for (const Call& c : calls) {
    if (c.site == CUPTI_API_EXIT) exits.push_back(c.cbid);
  }
  EXPECT_EQ(exits, (std::vector<CUpti_CallbackId>{
                       CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationGranularity,
                       CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
                       CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve,
                       CUPTI_DRIVER_TRACE_CBID_cuMemMap,
                       CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess,
                       CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle,
                       CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
                       CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
                       CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                       CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
                   }));
  ASSERT_EQ(calls.size(), 20u);
  const Call& reserve = calls[5];  // EXIT of cuMemAddressReserve
  EXPECT_EQ(reserve.ptr, ptr);
  EXPECT_EQ(reserve.size, 2 * MiB);
  const Call& map = calls[7];
  EXPECT_EQ(map.ptr, ptr);
  EXPECT_EQ(map.size, 2 * MiB);
  EXPECT_EQ(map.handle, handle);
  EXPECT_EQ(calls[11].handle, handle);  // EXIT of cuMemRetainAllocationHandle
  EXPECT_EQ(calls[11].ptr, ptr);
  EXPECT_EQ(calls[17].ptr, ptr);  // EXIT of cuMemUnmap
  EXPECT_EQ(calls[17].size, 2 * MiB);
}

}  // namespace
}  // namespace gpumem::testing
