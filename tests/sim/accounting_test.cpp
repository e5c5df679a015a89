// NVML's per-process accounting of everything the driver holds for a process: its context, loaded
// modules, plain allocations, VMM physical memory, pool and graph reservations and resident
// managed memory, in nvmlDeviceGetComputeRunningProcesses_v3 and the detail list alike; managed
// memory's residency; and the optional page rounding of plain allocations.
#include <gtest/gtest.h>

#include <string>

#include "sim_driver.hpp"

namespace gpumem::testing {
namespace {

constexpr const char* kAccountedGpus =
    R"({"devices": [{"name": "A", "total_mib": 81920, "reserved_mib": 100, "context_mib": 300},
                    {"name": "B", "total_mib": 81920}]})";

using PrefetchV2 = CUresult (*)(CUdeviceptr, std::size_t, CUmemLocation, unsigned, CUstream);
using PrefetchV1 = CUresult (*)(CUdeviceptr, std::size_t, CUdevice, CUstream);

std::uint64_t detail_used(const Driver& d, unsigned nvml_index) {
  nvmlProcessDetail_v1_t records[8]{};
  nvmlProcessDetailList_v1_t list{};
  list.version = kNvmlProcessDetailList_v1;
  list.mode = 0;
  list.numProcArrayEntries = 8;
  list.procArray = records;
  EXPECT_EQ(d.nvml.get<PFN_nvmlDeviceGetRunningProcessDetailList>(
                "nvmlDeviceGetRunningProcessDetailList")(d.device(nvml_index), &list),
            NVML_SUCCESS);
  for (unsigned i = 0; i < list.numProcArrayEntries; ++i) {
    if (records[i].pid == static_cast<unsigned>(::getpid())) return records[i].usedGpuMemory;
  }
  return 0;
}

TEST(simAccounting, ProcessFigureHoldsEverythingTheDriverHolds) {
  ::unsetenv("CUDA_MODULE_LOADING");
  SimGpu gpu(kAccountedGpus);
  Driver d;
  d.use(0);
  std::uint64_t expected = 300 * MiB;  // the context
  EXPECT_EQ(d.process_used(0), expected);

  // A module, loaded at its first function: 2 MiB.
  const std::string image(1000, ' ');
  CUmodule module = nullptr;
  ASSERT_EQ(d.fn<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData")(&module, image.c_str()),
            CUDA_SUCCESS);
  CUfunction kernel = nullptr;
  ASSERT_EQ(d.fn<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction")(
                &kernel, module, "k"),
            CUDA_SUCCESS);
  expected += 2 * MiB;
  EXPECT_EQ(d.process_used(0), expected);

  CUdeviceptr plain = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&plain, 10 * MiB), CUDA_SUCCESS);
  expected += 10 * MiB;

  // VMM, released while mapped: still held.
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(d.fn<PFN_cuMemCreate>("cuMemCreate")(&handle, 4 * MiB, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr range = 0;
  ASSERT_EQ(
      d.fn<CUresult (*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve")(&range, 4 * MiB, 0, 0, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuMemMap>("cuMemMap")(range, 4 * MiB, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);
  expected += 4 * MiB;

  // A pool block of 1 MiB, freed: its 2 MiB page stays reserved.
  CUdeviceptr block = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&block, MiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(block, nullptr), CUDA_SUCCESS);
  expected += 2 * MiB;

  // A graph allocating and freeing 3 MiB, launched: a 4 MiB graph reservation.
  CUgraph graph = nullptr;
  ASSERT_EQ(d.fn<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate")(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = 1;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = 3 * MiB;
  CUgraphNode node = nullptr;
  ASSERT_EQ(d.fn<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                              CUDA_MEM_ALLOC_NODE_PARAMS*)>("cuGraphAddMemAllocNode")(
                &node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr)>(
                "cuGraphAddMemFreeNode")(&node, graph, &node, 1, params.dptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(d.fn<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
                "cuGraphInstantiateWithFlags")(&exec, graph, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch")(exec, nullptr),
            CUDA_SUCCESS);
  expected += 4 * MiB;

  // Managed memory, prefetched to the device.
  CUdeviceptr managed = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAllocManaged>("cuMemAllocManaged")(&managed, 8 * MiB, 1), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), expected);  // host-backed until then
  ASSERT_EQ(d.fn<PrefetchV2>("cuMemPrefetchAsync_v2")(managed, 8 * MiB,
                                                      {CU_MEM_LOCATION_TYPE_DEVICE, 0}, 0, nullptr),
            CUDA_SUCCESS);
  expected += 8 * MiB;

  EXPECT_EQ(expected, 330 * MiB);
  EXPECT_EQ(d.process_used(0), expected);
  EXPECT_EQ(detail_used(d, 0), expected);
  EXPECT_EQ(d.nvml_used(0), expected);
  EXPECT_EQ(d.cuda_used(), expected + 100 * MiB);
  EXPECT_FALSE(d.listed(1));
}

TEST(simAccounting, ManagedMemoryIsResidentWherePrefetched) {
  SimGpu gpu(kAccountedGpus);
  Driver d;
  d.use(0);
  CUdeviceptr managed = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAllocManaged>("cuMemAllocManaged")(&managed, 6 * MiB, 1), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 300 * MiB);
  auto prefetch = d.fn<PrefetchV2>("cuMemPrefetchAsync_v2");
  ASSERT_EQ(prefetch(managed + MiB, MiB, {CU_MEM_LOCATION_TYPE_DEVICE, 0}, 0, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 306 * MiB);  // the whole allocation (a sim choice)
  ASSERT_EQ(prefetch(managed, 6 * MiB, {CU_MEM_LOCATION_TYPE_DEVICE, 1}, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 300 * MiB);
  EXPECT_EQ(d.nvml_used(1), 6 * MiB);
  ASSERT_EQ(prefetch(managed, 6 * MiB, {CU_MEM_LOCATION_TYPE_HOST, 0}, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(1), 0u);
  // The CUDA 12 signature, CU_DEVICE_CPU = -1 for the host.
  auto legacy = d.fn<PrefetchV1>("cuMemPrefetchAsync");
  ASSERT_EQ(legacy(managed, 6 * MiB, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 306 * MiB);
  ASSERT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(managed), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 300 * MiB);
  CUdeviceptr plain = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&plain, MiB), CUDA_SUCCESS);
  EXPECT_EQ(prefetch(plain, MiB, {CU_MEM_LOCATION_TYPE_DEVICE, 0}, 0, nullptr),
            CUDA_ERROR_INVALID_VALUE);                                     // not managed memory
  EXPECT_EQ(legacy(managed, MiB, -1, nullptr), CUDA_ERROR_INVALID_VALUE);  // freed
}

TEST(simAccounting, OptionalPageRounding) {
  SimGpu gpu(R"({"page_bytes": 2097152, "devices": [{"name": "A"}]})");
  Driver d;
  d.use(0);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&a, 1), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 2 * MiB);
  std::size_t pitch = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAllocPitch>("cuMemAllocPitch_v2")(&b, &pitch, 1000, 1000, 4),
            CUDA_SUCCESS);  // 1024 × 1000 bytes: one page
  EXPECT_EQ(d.process_used(0), 4 * MiB);
  std::size_t size = 0;
  CUdeviceptr base = 0;
  ASSERT_EQ(d.fn<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2")(&base, &size, a),
            CUDA_SUCCESS);
  EXPECT_EQ(size, 1u);  // the allocation is still what was asked for
  ASSERT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(a), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(b), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 0u);
}

}  // namespace
}  // namespace gpumem::testing
