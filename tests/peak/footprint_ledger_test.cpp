// The ledger's parts against a driver whose context costs memory (300 MiB here, as on a real GPU:
// ~500 MiB on an H100/H200). Each test starts its counter in a process whose context already
// exists, makes its peak between two readings, and checks every figure against what the simulated
// driver holds: a pool's or the graphs' growth is never offset against the context's share (issue
// 19: the default pool at release threshold 0 reported a peak of 0 MB for a 256 MiB spike).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "gpumem/peak.hpp"
#include "sim/sim_driver.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using namespace gpumem::abi;
using testing::mib;
using testing::MiB;
using testing::SimGpu;

using LedgerStreamSync = CUresult (*)(CUstream);
using LedgerSetAttribute = CUresult (*)(CUmemoryPool, int, void*);
using LedgerPoolCreate = CUresult (*)(CUmemoryPool*, const CUmemPoolProps*);
using LedgerPoolDestroy = CUresult (*)(CUmemoryPool);
using LedgerSetPool = CUresult (*)(CUdevice, CUmemoryPool);

constexpr std::uint64_t kKeepAll = std::numeric_limits<std::uint64_t>::max();

struct FootprintLedger : ::testing::Test {
  SimGpu gpu{R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771,
                             "context_mib": 300}]})"};
  testing::Driver driver;
  void SetUp() override {
    driver.use(0);
    ASSERT_EQ(driver.process_used(0), 300 * MiB);  // the context, before any counter
  }

  template <class Fn>
  Fn fn(const char* name) {
    return driver.fn<Fn>(name);
  }
  // The process's usage as the simulated NVML lists it.
  std::int64_t device_figure() { return static_cast<std::int64_t>(driver.process_used(0)); }
  // The reading, whose level must be the device's figure.
  PeakReading read(const PeakCounter& counter) {
    const PeakReading reading = counter.read();
    EXPECT_EQ(reading.quantity, Quantity::process_footprint);
    EXPECT_EQ(reading.current_bytes, device_figure());
    return reading;
  }

  CUmemoryPool default_pool() {
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(fn<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, 0), CUDA_SUCCESS);
    return pool;
  }
  CUmemoryPool create_pool() {
    CUmemPoolProps props{};
    props.allocType = 1;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemoryPool pool = nullptr;
    EXPECT_EQ(fn<LedgerPoolCreate>("cuMemPoolCreate")(&pool, &props), CUDA_SUCCESS);
    return pool;
  }
  void set_threshold(CUmemoryPool pool, std::uint64_t threshold) {
    ASSERT_EQ(fn<LedgerSetAttribute>("cuMemPoolSetAttribute")(
                  pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
              CUDA_SUCCESS);
  }
  std::int64_t reserved(CUmemoryPool pool) {
    std::uint64_t value = 0;
    EXPECT_EQ(fn<PFN_cuMemPoolGetAttribute>("cuMemPoolGetAttribute")(
                  pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value),
              CUDA_SUCCESS);
    return static_cast<std::int64_t>(value);
  }
  // An allocation of `bytes` from `pool` (nullptr: the device's current pool), freed at once.
  void spike(CUmemoryPool pool, std::size_t bytes) {
    CUdeviceptr block = 0;
    if (pool == nullptr) {
      ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&block, bytes, nullptr), CUDA_SUCCESS);
    } else {
      ASSERT_EQ(
          fn<PFN_cuMemAllocFromPoolAsync>("cuMemAllocFromPoolAsync")(&block, bytes, pool, nullptr),
          CUDA_SUCCESS);
    }
    ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(block, nullptr), CUDA_SUCCESS);
  }
  void synchronize() {
    ASSERT_EQ(fn<LedgerStreamSync>("cuStreamSynchronize")(nullptr), CUDA_SUCCESS);
  }
};

// The issue's pattern: threshold 0, 256 MiB, trimmed at the synchronisation, then 128 MiB.
TEST_F(FootprintLedger, TheDefaultPoolAtThresholdZeroGrowsInsideTheTrace) {
  set_threshold(default_pool(), 0);
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  spike(nullptr, 256 * MiB);
  synchronize();
  spike(nullptr, 128 * MiB);
  synchronize();
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.start_bytes, mib(300));
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(256));
  EXPECT_NE(reading.covers & coverage::pools, 0u);
  EXPECT_NE(reading.covers & coverage::context, 0u);
}

TEST_F(FootprintLedger, TheDefaultPoolKeepingEverythingUntilTrimmed) {
  const CUmemoryPool pool = default_pool();
  set_threshold(pool, kKeepAll);
  PeakCounter counter(0, Source::exact);
  spike(nullptr, 256 * MiB);
  synchronize();
  spike(nullptr, 128 * MiB);  // from the 256 MiB kept
  synchronize();
  PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, mib(256));
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(256));
  ASSERT_EQ(fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(pool, 0), CUDA_SUCCESS);
  reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(256));
}

// A created pool made the device's current one, and used by name as well.
TEST_F(FootprintLedger, ACreatedPoolAtThresholdZeroAndKeepingEverything) {
  for (const std::uint64_t threshold : {std::uint64_t{0}, kKeepAll}) {
    SCOPED_TRACE(threshold);
    const CUmemoryPool pool = create_pool();
    set_threshold(pool, threshold);
    ASSERT_EQ(fn<LedgerSetPool>("cuDeviceSetMemPool")(0, pool), CUDA_SUCCESS);
    PeakCounter counter(0, Source::exact);
    spike(nullptr, 64 * MiB);  // through the current pool
    spike(pool, 96 * MiB);     // by name: grows it to 96 MiB
    synchronize();
    spike(pool, 32 * MiB);
    synchronize();
    const std::int64_t kept = threshold == 0 ? 0 : mib(96);
    PeakReading reading = read(counter);
    EXPECT_EQ(reading.current_bytes - reading.start_bytes, kept);
    EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(96));
    ASSERT_EQ(fn<LedgerSetPool>("cuDeviceSetMemPool")(0, default_pool()), CUDA_SUCCESS);
    ASSERT_EQ(fn<LedgerPoolDestroy>("cuMemPoolDestroy")(pool), CUDA_SUCCESS);
    reading = read(counter);
    EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
    EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(96));
  }
}

TEST_F(FootprintLedger, AnExplicitTrimKeepsWhatItIsAskedAndAGrowthAfterItCounts) {
  const CUmemoryPool pool = default_pool();
  set_threshold(pool, kKeepAll);
  PeakCounter counter(0, Source::exact);
  spike(nullptr, 100 * MiB);
  ASSERT_EQ(fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(pool, 40 * MiB), CUDA_SUCCESS);
  const std::int64_t kept = reserved(pool);
  ASSERT_GE(kept, mib(40));
  ASSERT_LT(kept, mib(100));
  spike(nullptr, 150 * MiB);  // grows it again, past the first peak
  ASSERT_EQ(fn<PFN_cuMemPoolTrimTo>("cuMemPoolTrimTo")(pool, 0), CUDA_SUCCESS);
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(150));
}

// Graph memory: launched and trimmed inside the trace, twice.
TEST_F(FootprintLedger, AGraphReservationGrowsInsideTheTrace) {
  using GraphCreate = CUresult (*)(CUgraph*, unsigned);
  using AddAlloc = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS*);
  using AddFree = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using Launch = CUresult (*)(CUgraphExec, CUstream);
  using Trim = CUresult (*)(CUdevice);
  PeakCounter counter(0, Source::exact);
  CUgraph graph = nullptr;
  ASSERT_EQ(fn<GraphCreate>("cuGraphCreate")(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = 1;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = 200 * MiB;
  CUgraphNode node = nullptr;
  ASSERT_EQ(fn<AddAlloc>("cuGraphAddMemAllocNode")(&node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  ASSERT_EQ(fn<AddFree>("cuGraphAddMemFreeNode")(&node, graph, nullptr, 0, params.dptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(fn<Instantiate>("cuGraphInstantiateWithFlags")(&exec, graph, 0), CUDA_SUCCESS);
  std::int64_t highest = 0;
  for (int launch = 0; launch < 2; ++launch) {
    ASSERT_EQ(fn<Launch>("cuGraphLaunch")(exec, nullptr), CUDA_SUCCESS);
    highest = std::max(highest, device_figure() - mib(300));
    ASSERT_EQ(fn<Trim>("cuDeviceGraphMemTrim")(0), CUDA_SUCCESS);
  }
  ASSERT_GE(highest, mib(200));
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, 0);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, highest);
}

// Reservations made before the trace: the default pool seen at the counter's start, and a created
// pool first seen when it grows inside the trace (its earlier reservation is in the context's
// share that NVML showed; only its growth is the trace's).
TEST_F(FootprintLedger, PoolsThatExistedBeforeTheTraceCountOnlyTheirGrowth) {
  const CUmemoryPool current = default_pool();
  set_threshold(current, kKeepAll);
  const CUmemoryPool created = create_pool();
  set_threshold(created, kKeepAll);
  CUdeviceptr held = 0;
  ASSERT_EQ(fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&held, 64 * MiB, nullptr), CUDA_SUCCESS);
  spike(created, 48 * MiB);
  synchronize();
  {
    // Another counter first: the process's footprint has been reconciled (the context's share
    // includes both reservations) before the trace below starts.
    PeakCounter earlier(0, Source::exact);
    EXPECT_EQ(read(earlier).current_bytes, mib(300 + 64 + 48));
  }
  PeakCounter counter(0, Source::exact);
  EXPECT_EQ(counter.read().start_bytes, mib(300 + 64 + 48));
  spike(created, 80 * MiB);  // grows the created pool by 32 MiB, first seen here
  spike(nullptr, 96 * MiB);  // the default pool (64 MiB in use) grows by 96 MiB
  synchronize();
  const PeakReading reading = read(counter);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, mib(32 + 96));
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, mib(32 + 96));
  ASSERT_EQ(fn<PFN_cuMemFreeAsync>("cuMemFreeAsync")(held, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fn<LedgerPoolDestroy>("cuMemPoolDestroy")(created), CUDA_SUCCESS);
}

}  // namespace
}  // namespace gpumem
