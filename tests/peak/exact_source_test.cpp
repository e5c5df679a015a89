// The exact source's paths: each allocation API, blocks from before tracing, the runtime's double
// view, managed memory kept apart, and CUPTI shared politely with other tools.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "gpumem/allocate.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/event_observer.hpp"
#include "gpumem/internal/exact_ledger.hpp"
#include "gpumem/peak.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/sim_driver.hpp"

namespace gpumem {
namespace {

using namespace gpumem::abi;
using testing::MiB;
using testing::OtherCuptiClient;
using testing::sim_symbol;
using testing::SimGpu;

std::int64_t used_delta(const PeakCounter& counter) {
  const PeakReading reading = counter.read();
  return reading.current_bytes - reading.start_bytes;
}
std::int64_t peak_delta(const PeakCounter& counter) {
  const PeakReading reading = counter.read();
  return reading.peak_bytes - reading.start_bytes;
}

// CUPTI's calls for one driver call site, as the callback sees them.
struct DriverCall {
  CUresult result = CUDA_SUCCESS;
  std::uint64_t correlation = 0;
  CUpti_CallbackData data{};
  DriverCall() {
    data.functionReturnValue = &result;
    data.correlationData = &correlation;
    data.contextUid = 1;
  }
  void alloc_exit(CUdeviceptr address, std::size_t bytes) {
    cuMemAlloc_v2_params params{&address, bytes};
    send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &params);
  }
  void free_at(int site, CUdeviceptr address) {
    cuMemFree_v2_params params{address};
    send(site, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &params);
  }
  void send(int site, CUpti_CallbackId cbid, const void* params) {
    data.callbackSite = site;
    data.functionParams = params;
    peak::on_driver_call(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  }
};

TEST(ExactSource, AFreeRacingTheReuseOfItsAddressCountsBothBlocks) {
  SimGpu gpu;
  peak::Channel& exact = *peak::channel(peak::Stream::exact, 0);
  const std::int64_t before = exact.level();
  constexpr CUdeviceptr kAddress = 1ull << 41;
  DriverCall first, second;
  first.alloc_exit(kAddress, 4 * MiB);
  first.free_at(CUPTI_API_ENTER, kAddress);  // the driver frees it here…
  second.alloc_exit(kAddress, 2 * MiB);      // …and hands the address to another thread
  first.free_at(CUPTI_API_EXIT, kAddress);
  EXPECT_EQ(exact.level() - before, static_cast<std::int64_t>(2 * MiB));
  second.free_at(CUPTI_API_ENTER, kAddress);
  second.free_at(CUPTI_API_EXIT, kAddress);
  EXPECT_EQ(exact.level() - before, 0);
}

TEST(ExactSource, AFailedFreeKeepsItsBlock) {
  SimGpu gpu;
  peak::Channel& exact = *peak::channel(peak::Stream::exact, 0);
  const std::int64_t before = exact.level();
  constexpr CUdeviceptr kAddress = 1ull << 42;
  DriverCall call;
  call.alloc_exit(kAddress, 3 * MiB);
  call.free_at(CUPTI_API_ENTER, kAddress);
  call.result = CUDA_ERROR_INVALID_VALUE;
  call.free_at(CUPTI_API_EXIT, kAddress);
  EXPECT_EQ(exact.level() - before, static_cast<std::int64_t>(3 * MiB));
  call.result = CUDA_SUCCESS;
  call.free_at(CUPTI_API_ENTER, kAddress);
  call.free_at(CUPTI_API_EXIT, kAddress);
  EXPECT_EQ(exact.level() - before, 0);
}

TEST(ExactSource, BlockFromBeforeTracingFreedInside) {
  SimGpu gpu;
  DeviceAllocation old_block = device_allocate(8 * MiB, 0);
  ASSERT_TRUE(old_block.valid());
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  DeviceAllocation fresh = device_allocate(1 * MiB, 0);
  old_block.reset();  // its size comes from cuMemGetAddressRange
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.start_bytes, static_cast<std::int64_t>(8 * MiB));
  EXPECT_EQ(reading.current_bytes, static_cast<std::int64_t>(1 * MiB));
  EXPECT_EQ(reading.peak_bytes, static_cast<std::int64_t>(9 * MiB));
  fresh.reset();
  EXPECT_EQ(used_delta(counter), -static_cast<std::int64_t>(8 * MiB));
}

TEST(ExactSource, PitchAsyncAndVirtualMemory) {
  SimGpu gpu;
  testing::use_device(0);
  PeakCounter zero(0, Source::exact);
  PeakCounter one(1, Source::exact);
  ASSERT_EQ(zero.source(), Source::exact);

  auto alloc_pitch = sim_symbol<PFN_cuMemAllocPitch>("libcuda.so.1", "cuMemAllocPitch_v2");
  auto alloc_async = sim_symbol<PFN_cuMemAllocAsync>("libcuda.so.1", "cuMemAllocAsync");
  auto free_async = sim_symbol<PFN_cuMemFreeAsync>("libcuda.so.1", "cuMemFreeAsync");
  auto mem_free = sim_symbol<PFN_cuMemFree>("libcuda.so.1", "cuMemFree_v2");
  auto create = sim_symbol<PFN_cuMemCreate>("libcuda.so.1", "cuMemCreate");
  auto release = sim_symbol<PFN_cuMemRelease>("libcuda.so.1", "cuMemRelease");

  // Pitch: 1000 bytes wide rounds up to a 1024 pitch; 3 rows.
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  ASSERT_EQ(alloc_pitch(&pitched, &pitch, 1000, 3, 4), CUDA_SUCCESS);
  ASSERT_EQ(pitch, 1024u);
  EXPECT_EQ(used_delta(zero), 3072);

  // A stream-ordered allocation takes what its pool reserves (the pool's growth step, 2 MiB on
  // the simulated driver), and the pool keeps it after the free.
  CUdeviceptr async_block = 0;
  ASSERT_EQ(alloc_async(&async_block, 777, nullptr), CUDA_SUCCESS);
  CUmemoryPool pool = nullptr;
  std::uint64_t reserved = 0;
  ASSERT_EQ(sim_symbol<PFN_cuDeviceGetMemPool>("libcuda.so.1", "cuDeviceGetMemPool")(&pool, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(sim_symbol<PFN_cuMemPoolGetAttribute>("libcuda.so.1", "cuMemPoolGetAttribute")(
                pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
            CUDA_SUCCESS);
  ASSERT_EQ(reserved, 2 * MiB);
  EXPECT_EQ(used_delta(zero), static_cast<std::int64_t>(3072 + reserved));
  ASSERT_EQ(free_async(async_block, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(mem_free(pitched), CUDA_SUCCESS);
  EXPECT_EQ(used_delta(zero), static_cast<std::int64_t>(reserved));
  EXPECT_EQ(peak_delta(zero), static_cast<std::int64_t>(3072 + reserved));
  ASSERT_EQ(sim_symbol<PFN_cuMemPoolTrimTo>("libcuda.so.1", "cuMemPoolTrimTo")(pool, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(used_delta(zero), 0);

  // VMM: the device is the allocation's location, not the current context's.
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 1;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(create(&handle, 2 * MiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(used_delta(one), static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(used_delta(zero), 0);
  ASSERT_EQ(release(handle), CUDA_SUCCESS);
  EXPECT_EQ(used_delta(one), 0);
  EXPECT_EQ(peak_delta(one), static_cast<std::int64_t>(2 * MiB));
}

TEST(ExactSource, ManagedMemoryIsKeptApart) {
  SimGpu gpu;
  testing::use_device(0);
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  peak::Channel* managed = peak::channel(peak::Stream::managed, 0);
  const std::int64_t managed_before = managed->level();

  auto alloc_managed = sim_symbol<PFN_cuMemAllocManaged>("libcuda.so.1", "cuMemAllocManaged");
  auto mem_free = sim_symbol<PFN_cuMemFree>("libcuda.so.1", "cuMemFree_v2");
  CUdeviceptr block = 0;
  ASSERT_EQ(alloc_managed(&block, 4 * MiB, 1), CUDA_SUCCESS);
  EXPECT_EQ(peak_delta(counter), 0);
  EXPECT_EQ(managed->level() - managed_before, static_cast<std::int64_t>(4 * MiB));
  ASSERT_EQ(mem_free(block), CUDA_SUCCESS);
  EXPECT_EQ(managed->level(), managed_before);
  EXPECT_EQ(peak_delta(counter), 0);
}

// The simulated runtime's cudaSetDevice, cudaMalloc and cudaFree.
struct SimRuntime {
  int (*set_device)(int) = sim_symbol<int (*)(int)>("libcudart.so.13", "cudaSetDevice");
  int (*malloc)(void**, size_t) = sim_symbol<int (*)(void**, size_t)>("libcudart.so.13",
                                                                      "cudaMalloc");
  int (*free)(void*) = sim_symbol<int (*)(void*)>("libcudart.so.13", "cudaFree");
};

TEST(ExactSource, RuntimeAllocationCountsOnce) {
  SimGpu gpu;
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  const SimRuntime runtime;
  const auto set_device = runtime.set_device;
  const auto cuda_malloc = runtime.malloc;
  const auto cuda_free = runtime.free;
  ASSERT_EQ(set_device(0), 0);
  void* block = nullptr;
  ASSERT_EQ(cuda_malloc(&block, 6 * MiB), 0);
  EXPECT_EQ(used_delta(counter), static_cast<std::int64_t>(6 * MiB));
  ASSERT_EQ(cuda_free(block), 0);
  EXPECT_EQ(used_delta(counter), 0);
  EXPECT_EQ(peak_delta(counter), static_cast<std::int64_t>(6 * MiB));
}

TEST(ExactSource, SubscriptionHeldOnlyWhileACounterNeedsIt) {
  SimGpu gpu;
  OtherCuptiClient other;
  {
    PeakCounter counter(0, Source::exact);
    ASSERT_EQ(counter.source(), Source::exact);
    EXPECT_EQ(other.subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    PeakCounter second(0, Source::automatic);  // shares the subscription
    EXPECT_EQ(second.source(), Source::exact);
  }
  EXPECT_EQ(other.subscribe(), CUPTI_SUCCESS);  // the last counter let go
  other.unsubscribe();
  PeakCounter again(0);
  EXPECT_EQ(again.source(), Source::exact);
  EXPECT_EQ(exact_source_status(), "");
}

TEST(ExactSource, AnotherToolHoldingCuptiFallsBackToSampled) {
  SimGpu gpu;
  OtherCuptiClient other;
  ASSERT_EQ(other.subscribe(), CUPTI_SUCCESS);
  PeakCounter counter(0);
  EXPECT_EQ(counter.source(), Source::sampled);
  const std::string status = exact_source_status();
  EXPECT_NE(status.find("held by another tool"), std::string::npos) << status;
  const auto all = diagnostics();
  EXPECT_EQ(std::count(all.begin(), all.end(), status), 1);
  PeakCounter second(0, Source::exact);  // asked for exact: sampled too, said once
  EXPECT_EQ(second.source(), Source::sampled);
  const auto again = diagnostics();
  EXPECT_EQ(std::count(again.begin(), again.end(), status), 1);

  // The other tool was not disturbed: it still sees the calls.
  const int before = other.calls_seen();
  DeviceAllocation block = device_allocate(3 * MiB, 0);
  ASSERT_TRUE(block.valid());
  EXPECT_GT(other.calls_seen(), before);
  // And the sampled counter measures.
  EXPECT_EQ(counter.read().current_bytes - counter.read().start_bytes,
            static_cast<std::int64_t>(3 * MiB));
}

TEST(ExactSource, CuptiBusyFaultFallsBackToSampled) {
  SimGpu gpu(testing::kTwoGpus, "cupti_busy");
  PeakCounter counter(0);
  EXPECT_EQ(counter.source(), Source::sampled);
  EXPECT_NE(exact_source_status().find("held by another tool"), std::string::npos);
  DeviceAllocation block = device_allocate(2 * MiB, 0);
  EXPECT_EQ(counter.read().current_bytes - counter.read().start_bytes,
            static_cast<std::int64_t>(2 * MiB));
}

TEST(ExactSource, MissingCuptiFallsBackToSampled) {
  SimGpu gpu;
  ::setenv("GPUMEM_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
  PeakCounter counter(0);
  EXPECT_EQ(counter.source(), Source::sampled);
  EXPECT_NE(exact_source_status(), "");
}

// A ledger placed as `gpumem run` places it (exact_ledger.hpp): words outside the library, and a
// mirror that records each delta with the level its word held when the mirror heard it.
struct PlacedLedger {
  std::atomic<std::uint64_t> words[detail::kLedgerOrdinals] = {};
  struct Heard {
    int ordinal;
    std::int64_t delta;
    std::int64_t word_before;
    bool operator==(const Heard&) const = default;
  };
  std::vector<Heard> heard;
  // The level's moves (a call's half that moves only the bracketed level has none).
  static std::int64_t mirror(void* ctx, int ordinal, std::int64_t delta,
                             detail::LedgerBracket) noexcept {
    auto& self = *static_cast<PlacedLedger*>(ctx);
    if (delta != 0) self.heard.push_back({ordinal, delta, self.level(ordinal)});
    return 0;
  }
  std::int64_t level(int ordinal) const { return detail::ledger_level(words[ordinal].load()); }
  bool place(detail::LedgerStart start = detail::LedgerStart::carry) {
    return detail::place_exact_ledger({words, &PlacedLedger::mirror, this}, start);
  }
};

// Each device event moves the placed word once, after its mirror heard it; managed memory is in
// neither; once the ledger is back home the process's counters go on from the same level.
TEST(ExactLedger, APlacedWordMovesOncePerEventAfterItsMirror) {
  SimGpu gpu;
  PlacedLedger ledger;
  ASSERT_TRUE(ledger.place());
  PeakCounter counter(1, Source::exact);
  {
    DeviceAllocation block = device_allocate(5000, 1);
    EXPECT_EQ(ledger.level(1), 5000);
    EXPECT_EQ(used_delta(counter), 5000);  // the counter reads the placed word
  }
  testing::use_device(0);
  auto alloc_managed = sim_symbol<PFN_cuMemAllocManaged>("libcuda.so.1", "cuMemAllocManaged");
  auto mem_free = sim_symbol<PFN_cuMemFree>("libcuda.so.1", "cuMemFree_v2");
  CUdeviceptr managed = 0;
  ASSERT_EQ(alloc_managed(&managed, 4096, 1), CUDA_SUCCESS);
  ASSERT_EQ(mem_free(managed), CUDA_SUCCESS);
  const std::vector<PlacedLedger::Heard> expected{{1, 5000, 0}, {1, -5000, 5000}};
  EXPECT_EQ(ledger.heard, expected);
  EXPECT_EQ(ledger.level(1), 0);
  EXPECT_EQ(peak_delta(counter), 5000);

  DeviceAllocation kept = device_allocate(3000, 1);
  detail::unplace_exact_ledger();
  {
    DeviceAllocation unseen = device_allocate(7000, 1);
    EXPECT_EQ(used_delta(counter), 10000);  // carried home, and counted there
    EXPECT_EQ(peak_delta(counter), 10000);
  }
  EXPECT_EQ(ledger.level(1), 3000);  // the placed word moves no more
  EXPECT_EQ(ledger.heard.size(), 3u);
}

// A forked child's ledger starts empty: nothing its parent held is its own. Placing again moves
// the ledger; taking a word's level empties it for a next owner.
TEST(ExactLedger, AForkedChildsPlacementStartsEmptyAndATakeEmptiesAWord) {
  SimGpu gpu;
  constexpr auto kMiB = static_cast<std::int64_t>(MiB);
  PlacedLedger first;
  ASSERT_TRUE(first.place());
  PeakCounter counter(0, Source::exact);
  DeviceAllocation block = device_allocate(2 * MiB, 0);
  PlacedLedger second;
  ASSERT_TRUE(second.place(detail::LedgerStart::empty_in_forked_child));
  EXPECT_EQ(second.level(0), 0);
  { DeviceAllocation more = device_allocate(MiB, 0); }
  EXPECT_EQ(second.heard, (std::vector<PlacedLedger::Heard>{{0, kMiB, 0}, {0, -kMiB, kMiB}}));
  EXPECT_EQ(first.level(0), 2 * kMiB);  // left as it was
  EXPECT_EQ(detail::take_ledger_level(first.words[0]), 2 * kMiB);
  EXPECT_EQ(first.level(0), 0);
  EXPECT_EQ(detail::take_ledger_level(first.words[0]), 0);
  detail::unplace_exact_ledger();
}

TEST(ExactLedger, APlacementWithoutWordsOrMirrorIsRefused) {
  PlacedLedger ledger;
  EXPECT_FALSE(detail::place_exact_ledger({nullptr, &PlacedLedger::mirror, &ledger},
                                          detail::LedgerStart::carry));
  EXPECT_FALSE(
      detail::place_exact_ledger({ledger.words, nullptr, &ledger}, detail::LedgerStart::carry));
}

// What the call observer and a placed ledger's mirror hear, in order: "enter", each delta of the
// level, each move of the bracketed level ("upper ±N"; "upper peak N" where a successful
// allocation raises its peak to the level its ENTER reached), "exit". All are plain functions,
// so the record is a static.
std::vector<std::string>& watch_calls_and_events() {
  static std::vector<std::string> seen;
  static std::atomic<std::uint64_t> words[detail::kLedgerOrdinals];
  static std::int64_t upper = 0;
  seen.clear();
  upper = 0;
  EXPECT_TRUE(detail::place_exact_ledger(
      {words,
       [](void*, int, std::int64_t delta, detail::LedgerBracket bracket) noexcept {
         if (delta != 0) seen.push_back(std::to_string(delta));
         if (bracket.delta != 0)
           seen.push_back("upper " + std::string(bracket.delta > 0 ? "+" : "") +
                          std::to_string(bracket.delta));
         upper += bracket.delta;
         if (bracket.peak != detail::kBracketAtLevel && bracket.peak != detail::kBracketNoPeak)
           seen.push_back("upper peak " + std::to_string(bracket.peak));
         return upper;
       },
       nullptr},
      detail::LedgerStart::carry));
  detail::set_call_observer(
      [](void*, bool entering) { seen.push_back(entering ? "enter" : "exit"); }, nullptr);
  return seen;
}

void stop_watching() {
  detail::set_call_observer(nullptr, nullptr);
  detail::unplace_exact_ledger();
}

// The call observer brackets each traced call: its ENTER before the call's events, its EXIT
// after them (what `gpumem run`'s monitor relies on to tell a reading a call overlapped). An
// allocation raises the bracketed level at its ENTER and the level at its EXIT; a free lowers
// the level at its ENTER and the bracketed level at its EXIT (docs/peaks.md, "Calls in flight
// together").
TEST(ExactSource, CallObserverBracketsEachCallsEvents) {
  SimGpu gpu;
  std::vector<std::string>& seen = watch_calls_and_events();
  PeakCounter counter(0, Source::exact);
  testing::use_device(0);
  auto mem_alloc = sim_symbol<PFN_cuMemAlloc>("libcuda.so.1", "cuMemAlloc_v2");
  auto mem_free = sim_symbol<PFN_cuMemFree>("libcuda.so.1", "cuMemFree_v2");
  seen.clear();
  CUdeviceptr block = 0;
  ASSERT_EQ(mem_alloc(&block, 4096), CUDA_SUCCESS);
  ASSERT_EQ(mem_free(block), CUDA_SUCCESS);
  EXPECT_EQ(mem_free(block), CUDA_ERROR_INVALID_VALUE);  // a failed call: no event
  stop_watching();
  { DeviceAllocation unseen = device_allocate(7, 0); }
  const std::vector<std::string> expected{"enter", "upper +4096", "4096",  "upper peak 4096",
                                          "exit",  "enter",       "-4096", "upper -4096",
                                          "exit",  "enter",       "exit"};
  EXPECT_EQ(seen, expected);
}

// A runtime call and the driver call inside it are bracketed once: the driver call's events come
// between the runtime call's ENTER and EXIT, and each bracket is two locked adds to the shared
// counters under `gpumem run`.
TEST(ExactSource, CallObserverBracketsOnlyTheOutermostCall) {
  SimGpu gpu;
  const SimRuntime runtime;
  const auto set_device = runtime.set_device;
  const auto cuda_malloc = runtime.malloc;
  const auto cuda_free = runtime.free;
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(set_device(0), 0);
  std::vector<std::string>& seen = watch_calls_and_events();
  void* block = nullptr;
  ASSERT_EQ(cuda_malloc(&block, 8192), 0);
  ASSERT_EQ(cuda_free(block), 0);
  stop_watching();
  const std::vector<std::string> expected{"enter",           "upper +8192", "8192",
                                          "upper peak 8192", "exit",        "enter",
                                          "-8192",           "upper -8192", "exit"};
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace gpumem
