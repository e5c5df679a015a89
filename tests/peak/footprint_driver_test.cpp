// The process footprint against the simulated driver's documented lifetimes: every pattern's
// peak is seen even where it rose and fell between two readings (so NVML, read only at readings,
// could not have shown it), and every reading equals what the driver's NVML reports for the
// process.
#include <gtest/gtest.h>

#include "gpumem/peak.hpp"
#include "sim/sim_driver.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using namespace gpumem::abi;
using testing::mib;
using testing::MiB;
using testing::SimGpu;

// CUDA 0 is kTwoGpus' H200 (NVML 1); its contexts are free there, so the footprint is exactly
// what the patterns below hold.
constexpr int kCuda = 0;
constexpr unsigned kNvml = 1;

struct FootprintDriver : ::testing::Test {
  SimGpu gpu;
  testing::Driver driver;
  void SetUp() override { driver.use(kCuda); }

  // The reading, checked against the process's usage as NVML lists it.
  PeakReading read(const PeakCounter& counter) {
    const PeakReading reading = counter.read();
    EXPECT_EQ(reading.quantity, Quantity::process_footprint);
    EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(driver.process_used(kNvml)));
    return reading;
  }
  template <class Fn>
  Fn fn(const char* name) {
    return driver.fn<Fn>(name);
  }
};

TEST_F(FootprintDriver, APoolKeepsItsReservationAfterFreesUntilTrimmed) {
  PeakCounter counter(kCuda, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&a, 3 * MiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&b, 1 * MiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(a, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(b, nullptr), CUDA_SUCCESS);
  // Freed blocks return to the pool, which keeps its 4 MiB reservation.
  PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, mib(4));
  EXPECT_NE(reading.covers & coverage::pools, 0u);

  // A spike that a synchronisation trims before anyone reads: only the pool's events show it.
  counter.reset();
  CUdeviceptr spike = 0;
  ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&spike, 20 * MiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(spike, nullptr), CUDA_SUCCESS);
  using StreamSync = CUresult (*)(CUstream);
  ASSERT_EQ(fn<StreamSync>("cuStreamSynchronize")(nullptr), CUDA_SUCCESS);  // threshold 0: trims
  reading = read(counter);
  EXPECT_EQ(reading.current_bytes, 0);
  EXPECT_EQ(reading.peak_bytes, mib(20));
}

TEST_F(FootprintDriver, TrimToKeepsWhatItIsAsked) {
  PeakCounter counter(kCuda, Source::exact);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(fn<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, kCuda), CUDA_SUCCESS);
  std::uint64_t threshold = 64 * MiB;  // keep up to 64 MiB across synchronisations
  using SetAttribute = CUresult (*)(CUmemoryPool, int, void*);
  ASSERT_EQ(fn<SetAttribute>("cuMemPoolSetAttribute")(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                                      &threshold),
            CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&block, 10 * MiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(block, nullptr), CUDA_SUCCESS);
  using StreamSync = CUresult (*)(CUstream);
  ASSERT_EQ(fn<StreamSync>("cuStreamSynchronize")(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(read(counter).current_bytes, mib(10));  // under the threshold: retained
  ASSERT_EQ(fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(pool, 4 * MiB), CUDA_SUCCESS);
  std::uint64_t reserved = 0;
  ASSERT_EQ(fn<PFN_cuMemPoolGetAttribute>("cuMemPoolGetAttribute")(
                pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
            CUDA_SUCCESS);
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(reserved));
  EXPECT_EQ(reading.peak_bytes, mib(10));
}

TEST_F(FootprintDriver, VmmMemoryReleasedWhileMappedLivesUntilUnmapped) {
  PeakCounter counter(kCuda, Source::exact);
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = kCuda;
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr range = 0;
  using Reserve =
      CUresult (*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long);
  using AddressFree = CUresult (*)(CUdeviceptr, std::size_t);
  ASSERT_EQ(fn<PFN_cuMemCreate>("cuMemCreate")(&handle, 8 * MiB, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(fn<Reserve>("cuMemAddressReserve")(&range, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemMap>("cuMemMap")(range, 8 * MiB, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(fn<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);  // still mapped
  EXPECT_EQ(read(counter).current_bytes, mib(8));
  ASSERT_EQ(fn<PFN_cuMemUnmap>("cuMemUnmap")(range, 8 * MiB), CUDA_SUCCESS);
  ASSERT_EQ(fn<AddressFree>("cuMemAddressFree")(range, 8 * MiB), CUDA_SUCCESS);
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes, 0);
  EXPECT_EQ(reading.peak_bytes, mib(8));
}

TEST_F(FootprintDriver, GraphMemoryIsTheGraphReservation) {
  using GraphCreate = CUresult (*)(CUgraph*, unsigned);
  using AddAlloc = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS*);
  using AddFree = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using Launch = CUresult (*)(CUgraphExec, CUstream);
  using Trim = CUresult (*)(CUdevice);
  PeakCounter counter(kCuda, Source::exact);
  CUgraph graph = nullptr;
  ASSERT_EQ(fn<GraphCreate>("cuGraphCreate")(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = 1;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, kCuda};
  params.bytesize = 5 * MiB;
  CUgraphNode node = nullptr;
  ASSERT_EQ(fn<AddAlloc>("cuGraphAddMemAllocNode")(&node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  ASSERT_EQ(fn<AddFree>("cuGraphAddMemFreeNode")(&node, graph, nullptr, 0, params.dptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(fn<Instantiate>("cuGraphInstantiateWithFlags")(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(fn<Launch>("cuGraphLaunch")(exec, nullptr), CUDA_SUCCESS);
  std::uint64_t reserved = 0;
  ASSERT_EQ(fn<PFN_cuDeviceGetGraphMemAttribute>("cuDeviceGetGraphMemAttribute")(
                kCuda, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved),
            CUDA_SUCCESS);
  ASSERT_GT(reserved, 0u);
  ASSERT_EQ(fn<Trim>("cuDeviceGraphMemTrim")(kCuda), CUDA_SUCCESS);
  // Launched and trimmed between two readings: the reservation's events carry its peak.
  const PeakReading reading = read(counter);
  EXPECT_NE(reading.covers & coverage::graphs, 0u);
  EXPECT_EQ(reading.current_bytes, 0);
  EXPECT_EQ(reading.peak_bytes, static_cast<std::int64_t>(reserved));
}

TEST(FootprintContext, AContextCreatedAndDestroyedBetweenReadings) {
  SimGpu costly(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771,
                                "context_mib": 300}]})");
  testing::Driver fresh;
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  using CtxCreate = CUresult (*)(CUcontext*, unsigned, CUdevice);
  using CtxDestroy = CUresult (*)(CUcontext);
  ASSERT_EQ(fresh.fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(fresh.fn<CtxCreate>("cuCtxCreate_v2")(&context, 0, 0), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(fresh.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&block, 10 * MiB), CUDA_SUCCESS);
  ASSERT_EQ(fresh.fn<CtxDestroy>("cuCtxDestroy_v2")(context), CUDA_SUCCESS);  // frees the block
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(310));
}

TEST_F(FootprintDriver, ALazilyLoadedModuleCountsUntilUnloaded) {
  PeakCounter counter(kCuda, Source::exact);
  using Load = CUresult (*)(CUmodule*, const void*);
  using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
  using Unload = CUresult (*)(CUmodule);
  CUmodule module = nullptr;
  ASSERT_EQ(fn<Load>("cuModuleLoadData")(&module, ".version 8.0\n.target sm_90\n"), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(fn<GetFunction>("cuModuleGetFunction")(&function, module, "kernel"), CUDA_SUCCESS);
  const std::int64_t loaded = static_cast<std::int64_t>(driver.process_used(kNvml));
  ASSERT_GT(loaded, 0);  // lazy loading took memory at the first function, with no allocation
  ASSERT_EQ(fn<Unload>("cuModuleUnload")(module), CUDA_SUCCESS);
  const PeakReading reading = read(counter);
  EXPECT_NE(reading.covers & coverage::context, 0u);
  EXPECT_EQ(reading.current_bytes, 0);
  EXPECT_EQ(reading.peak_bytes, loaded);
}

}  // namespace
}  // namespace gpumem
