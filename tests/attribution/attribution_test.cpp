// Attribution on the simulated GPU: programs whose stacks are known (named functions that
// allocate through the simulated driver), asserting the blocks and bytes the simulator holds.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "driver/cuda.hpp"
#include "gpumem/allocate.hpp"
#include "gpumem/attribution.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/peak.hpp"
#include "gpumem/trace.hpp"
#include "support/sim_gpu.hpp"

namespace {

using gpumem::AttributionSnapshot;
using gpumem::DeviceAllocation;
using gpumem::testing::MiB;
using gpumem::testing::SimGpu;

constexpr std::int64_t kMiB = static_cast<std::int64_t>(MiB);

std::vector<DeviceAllocation> g_weights, g_activations, g_optimizer, g_spike;

// Each allocates in blocks of 100 MiB (50 for the spike) and keeps them.
[[gnu::noinline]] void load_weights() {
  for (int i = 0; i < 3; ++i) g_weights.push_back(gpumem::device_allocate(100 * MiB, 0));
}
[[gnu::noinline]] void activations() {
  for (int i = 0; i < 2; ++i) g_activations.push_back(gpumem::device_allocate(100 * MiB, 0));
}
[[gnu::noinline]] void optimizer_state() {
  for (int i = 0; i < 4; ++i) g_optimizer.push_back(gpumem::device_allocate(100 * MiB, 0));
}
[[gnu::noinline]] void spike() {
  g_spike.push_back(gpumem::device_allocate(50 * MiB, 0));
}
[[gnu::noinline]] DeviceAllocation huge_request() {
  DeviceAllocation allocation = gpumem::device_allocate(200000 * MiB, 0);
  return allocation;
}

void free_all() {
  g_weights.clear();
  g_activations.clear();
  g_optimizer.clear();
  g_spike.clear();
}

struct Cleanup {
  ~Cleanup() { free_all(); }
};

// Bytes a snapshot's blocks hold per function (the innermost named frame of each block's stack).
std::map<std::string, std::int64_t> bytes_by_function(const AttributionSnapshot& snapshot) {
  std::map<std::string, std::int64_t> out;
  for (const gpumem::LiveBlock& block : snapshot.blocks) {
    std::string name = "(no stack)";
    if (block.stack) {
      for (const std::size_t frame : snapshot.stacks.at(*block.stack)) {
        if (snapshot.frames.at(frame).function) {
          name = *snapshot.frames.at(frame).function;
          break;
        }
      }
    }
    out[name] += static_cast<std::int64_t>(block.bytes);
  }
  return out;
}

// The bytes of the function whose name contains `part` (exactly one must).
std::int64_t held_by(const AttributionSnapshot& snapshot, const std::string& part) {
  std::int64_t bytes = 0;
  int matches = 0;
  for (const auto& [name, held] : bytes_by_function(snapshot)) {
    if (name.find(part) != std::string::npos) {
      bytes += held;
      ++matches;
    }
  }
  EXPECT_LE(matches, 1) << part;
  return bytes;
}

bool contains(const std::optional<std::string>& text, const std::string& part) {
  return text && text->find(part) != std::string::npos;
}

TEST(Attribution, ThePeakSnapshotNamesTheFunctionHoldingTheMost) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  ASSERT_EQ(counter.source(), gpumem::Source::exact);
  ASSERT_TRUE(counter.attributing());
  load_weights();
  activations();
  g_activations.clear();  // the spike is over: the peak keeps it
  const gpumem::PeakReading reading = counter.read();
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->what, "peak");
  EXPECT_EQ(snapshot->level_bytes, reading.peak_bytes);
  EXPECT_EQ(snapshot->live_bytes, 500 * kMiB);
  EXPECT_EQ(snapshot->blocks.size(), 5u);
  EXPECT_EQ(held_by(*snapshot, "load_weights"), 300 * kMiB);
  EXPECT_EQ(held_by(*snapshot, "activations"), 200 * kMiB);
  EXPECT_TRUE(contains(snapshot->top_function(), "load_weights"));
  EXPECT_GE(snapshot->level_bytes, snapshot->live_bytes);
  for (const gpumem::LiveBlock& block : snapshot->blocks) {
    EXPECT_EQ(block.kind, gpumem::BlockKind::device);
    EXPECT_EQ(block.pid, static_cast<int>(::getpid()));
    EXPECT_GE(block.age_s, 0.0);
  }
  // Debug information names the file and line of the allocating frame.
  const std::size_t top = snapshot->bytes_by_stack().front().first;
  const gpumem::StackFrame& frame = snapshot->frames.at(snapshot->stacks.at(top).front());
  EXPECT_TRUE(contains(frame.file, "attribution_test.cpp"));
  EXPECT_GT(frame.line.value_or(0), 0);
  EXPECT_FALSE(frame.python);
  // No frame of gpumem's own, nor of the (simulated) CUDA libraries, is left in a stack.
  for (const auto& stack : snapshot->stacks) {
    const gpumem::StackFrame& innermost = snapshot->frames.at(stack.front());
    EXPECT_FALSE(contains(innermost.function, "gpumem::")) << *innermost.function;
    EXPECT_FALSE(contains(innermost.module, "libcuda")) << *innermost.module;
  }
}

// elfutils' libdw is loaded only to symbolize: where it cannot be, a snapshot still holds every
// block and its bytes, and its frames name their module only, and why is in the diagnostics.
TEST(Attribution, WithoutLibdwFramesNameTheirModuleAndTheDiagnosticsSayWhy) {
  ::setenv("GPUMEM_LIBDW_LIBRARY", "/nonexistent/libdw.so.1", 1);
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  load_weights();
  activations();
  g_activations.clear();
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->live_bytes, 500 * kMiB);
  EXPECT_EQ(snapshot->blocks.size(), 5u);
  const std::size_t top = snapshot->bytes_by_stack().front().first;
  const gpumem::StackFrame& frame = snapshot->frames.at(snapshot->stacks.at(top).front());
  EXPECT_FALSE(frame.file);
  EXPECT_FALSE(frame.line);
  EXPECT_TRUE(contains(frame.module, "gpumem_attribution_tests")) << frame.module.value_or("");
  bool said = false;
  for (const std::string& line : gpumem::diagnostics()) {
    said = said || (contains(line, "libdw") && contains(line, "/nonexistent/libdw.so.1"));
  }
  EXPECT_TRUE(said);
}

TEST(Attribution, NestedAndOverlappingCountersEachKeepTheirOwnPeak) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter outer(0, gpumem::Source::exact, gpumem::Attribution::on);
  load_weights();
  std::optional<AttributionSnapshot> inner_snapshot;
  {
    gpumem::PeakCounter inner(0, gpumem::Source::exact, gpumem::Attribution::on);
    activations();
    g_activations.clear();
    inner_snapshot = inner.peak_snapshot();
  }
  gpumem::PeakCounter late(0, gpumem::Source::exact, gpumem::Attribution::on);
  optimizer_state();
  const auto outer_snapshot = outer.peak_snapshot();
  const auto late_snapshot = late.peak_snapshot();
  ASSERT_TRUE(inner_snapshot && outer_snapshot && late_snapshot);
  // The inner counter peaked with the activations…
  EXPECT_EQ(inner_snapshot->live_bytes, 500 * kMiB);
  EXPECT_EQ(held_by(*inner_snapshot, "activations"), 200 * kMiB);
  EXPECT_EQ(held_by(*inner_snapshot, "optimizer_state"), 0);
  // …the outer one later and higher, with the optimizer's state and without the activations.
  EXPECT_EQ(outer_snapshot->live_bytes, 700 * kMiB);
  EXPECT_EQ(held_by(*outer_snapshot, "optimizer_state"), 400 * kMiB);
  EXPECT_EQ(held_by(*outer_snapshot, "load_weights"), 300 * kMiB);
  EXPECT_EQ(held_by(*outer_snapshot, "activations"), 0);
  EXPECT_TRUE(contains(outer_snapshot->top_function(), "optimizer_state"));
  EXPECT_EQ(outer_snapshot->level_bytes, outer.read().peak_bytes);
  EXPECT_EQ(late_snapshot->live_bytes, 700 * kMiB);
  EXPECT_GT(outer_snapshot->level_bytes, inner_snapshot->level_bytes);
}

TEST(Attribution, AResetPeakKeepsOnlyWhatCameAfter) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  load_weights();
  optimizer_state();
  g_optimizer.clear();
  counter.reset();
  const auto at_reset = counter.peak_snapshot();
  ASSERT_TRUE(at_reset);
  EXPECT_EQ(at_reset->live_bytes, 300 * kMiB);
  EXPECT_EQ(held_by(*at_reset, "optimizer_state"), 0);
  spike();
  const auto after = counter.peak_snapshot();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->live_bytes, 350 * kMiB);
  EXPECT_EQ(held_by(*after, "spike"), 50 * kMiB);
  EXPECT_EQ(after->level_bytes, counter.read().peak_bytes);
}

TEST(Attribution, BlocksFromBeforeAttributionAreNamedWithoutAStack) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter plain(0, gpumem::Source::exact);
  load_weights();
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  spike();
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->live_bytes, 350 * kMiB);
  EXPECT_EQ(held_by(*snapshot, "(no stack)"), 300 * kMiB);
  EXPECT_EQ(held_by(*snapshot, "spike"), 50 * kMiB);
  EXPECT_FALSE(plain.peak_snapshot());  // a counter that does not attribute has none
}

[[gnu::noinline]] void thread_worker(std::barrier<>& all_allocated,
                                     std::vector<DeviceAllocation>& mine) {
  for (int i = 0; i < 8; ++i) mine.push_back(gpumem::device_allocate(2 * MiB, 0));
  all_allocated.arrive_and_wait();
}

TEST(Attribution, ThreadsAllocatingAtOnceAreAllInThePeak) {
  SimGpu gpu;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  constexpr int kThreads = 4;
  std::barrier<> all_allocated(kThreads);
  std::vector<std::vector<DeviceAllocation>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      thread_worker(all_allocated, held[t]);
      held[t].clear();  // every thread frees only once all have allocated
    });
  }
  for (std::thread& thread : threads) thread.join();
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->blocks.size(), 32u);
  EXPECT_EQ(snapshot->live_bytes, 64 * kMiB);
  EXPECT_EQ(held_by(*snapshot, "thread_worker"), 64 * kMiB);
  EXPECT_EQ(snapshot->level_bytes, counter.read().peak_bytes);
  EXPECT_EQ(counter.read().current_bytes, counter.read().start_bytes);
}

[[gnu::noinline]] void churn(std::atomic<bool>& stop) {
  std::vector<DeviceAllocation> held;
  while (!stop.load()) {
    for (int i = 0; i < 4; ++i) held.push_back(gpumem::device_allocate(1 * MiB, 0));
    held.clear();
  }
}

TEST(Attribution, CountersStartingAndResettingWhileThreadsAllocateStayConsistent) {
  SimGpu gpu;
  gpumem::PeakCounter outer(0, gpumem::Source::exact, gpumem::Attribution::on);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back([&] { churn(stop); });
  for (int round = 0; round < 50; ++round) {
    gpumem::PeakCounter inner(0, gpumem::Source::exact, gpumem::Attribution::on);
    if (round % 2 == 0) inner.reset();
    const auto snapshot = inner.peak_snapshot();
    ASSERT_TRUE(snapshot);
    // The tree and the level move as one: what the blocks name is never more than the level,
    // and never more than two threads hold (4 MiB each).
    EXPECT_LE(snapshot->live_bytes, snapshot->level_bytes);
    EXPECT_LE(snapshot->live_bytes, 8 * kMiB);
    for (const gpumem::LiveBlock& block : snapshot->blocks) EXPECT_EQ(block.bytes, MiB);
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  const auto snapshot = outer.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_LE(snapshot->live_bytes, snapshot->level_bytes);
  EXPECT_EQ(snapshot->level_bytes, outer.read().peak_bytes);
  EXPECT_EQ(held_by(*snapshot, "churn"), snapshot->live_bytes);
}

// Below the peak on another thread: frees the peak's blocks one by one (the read must still see
// them) and allocates and frees batches of new ones (the table grows and shrinks under the read),
// never back at the peak; `events` counts its allocations and frees.
[[gnu::noinline]] void churn_below_the_peak(std::vector<DeviceAllocation>& peak_blocks,
                                            std::atomic<bool>& stop,
                                            std::atomic<std::uint64_t>& events) {
  std::vector<DeviceAllocation> batch;
  std::size_t next = 0;
  while (!stop.load()) {
    for (int i = 0; i < 2000; ++i) {
      batch.push_back(gpumem::device_allocate(1024, 0));
      events.fetch_add(1);
      if (i % 40 == 0 && next < peak_blocks.size()) {
        peak_blocks[next++].reset();
        events.fetch_add(1);
      }
    }
    for (DeviceAllocation& block : batch) {
      block.reset();
      events.fetch_add(1);
    }
    batch.clear();
  }
}

// A peak snapshot read while the device allocates and frees on another thread: the read lets the
// device's mutex go between its steps, and still gives exactly the blocks live at the peak.
TEST(Attribution, APeakSnapshotReadWhileTheDeviceMovesIsExactlyThePeaksBlocks) {
  SimGpu gpu;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  std::vector<DeviceAllocation> peak_blocks;
  std::map<std::uint64_t, std::uint64_t> expected;  // address -> bytes
  for (int i = 0; i < 20000; ++i) {
    peak_blocks.push_back(gpumem::device_allocate(4096 + 512 * (i % 7), 0));
    ASSERT_TRUE(peak_blocks.back().valid());
    expected[peak_blocks.back().address()] = peak_blocks.back().size();
  }
  DeviceAllocation headroom = gpumem::device_allocate(1024 * MiB, 0);  // freed: the churn's room
  ASSERT_TRUE(headroom.valid());
  expected[headroom.address()] = headroom.size();
  const std::int64_t peak = counter.read().peak_bytes;
  headroom.reset();
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> events{0};
  std::thread thread([&] { churn_below_the_peak(peak_blocks, stop, events); });
  int overlapped = 0;
  for (int read = 0; read < 10000 && overlapped < 5; ++read) {
    const std::uint64_t before = events.load();
    const auto snapshot = counter.peak_snapshot();
    overlapped += events.load() != before ? 1 : 0;
    ASSERT_TRUE(snapshot);
    std::map<std::uint64_t, std::uint64_t> got;
    for (const gpumem::LiveBlock& block : snapshot->blocks) {
      EXPECT_TRUE(got.emplace(block.address, block.bytes).second) << "twice: " << block.address;
    }
    ASSERT_EQ(got, expected) << "read " << read;
    EXPECT_EQ(snapshot->level_bytes, peak);
  }
  stop = true;
  thread.join();
  EXPECT_EQ(overlapped, 5);  // reads made while the other thread's events went on
  EXPECT_EQ(counter.read().peak_bytes, peak);
}

TEST(Attribution, AnOutOfMemoryIsRecordedWithTheRequestAndWhoHeldTheMost) {
  SimGpu gpu;
  Cleanup cleanup;
  const std::string report =
      (std::filesystem::temp_directory_path() / ("gpumem-oom-" + std::to_string(::getpid())))
          .string();
  ::setenv("GPUMEM_OOM_REPORT", report.c_str(), 1);
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  load_weights();
  activations();
  const DeviceAllocation failed = huge_request();
  EXPECT_FALSE(failed.valid());
  const auto oom = gpumem::last_oom();
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->what, "oom");
  EXPECT_TRUE(oom->attributed);
  EXPECT_EQ(oom->live_bytes, 500 * kMiB);
  EXPECT_TRUE(contains(oom->top_function(), "load_weights"));
  ASSERT_TRUE(oom->failure);
  EXPECT_EQ(oom->failure->bytes, 200000 * MiB);
  EXPECT_EQ(oom->failure->error, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(oom->failure->kind, gpumem::BlockKind::device);
  ASSERT_TRUE(oom->failure->stack);
  const auto& failing = oom->stacks.at(*oom->failure->stack);
  EXPECT_TRUE(contains(oom->frames.at(failing.front()).function, "huge_request"));
  // The simulated H200 (CUDA ordinal 0): 143771 MiB, and what the driver reports free.
  EXPECT_EQ(oom->failure->total_bytes, 143771 * MiB);
  std::size_t free = 0, total = 0;
  ASSERT_EQ(gpumem::driver::cuda().memGetInfo(&free, &total), gpumem::abi::CUDA_SUCCESS);
  EXPECT_EQ(oom->failure->free_bytes, free);
  EXPECT_TRUE(oom->other_processes.empty());
  // NVML was read at the failure (an in-process counter may start it): nobody else, known.
  EXPECT_EQ(oom->other_processes_age_s, 0.0);
  EXPECT_GT(oom->monotonic_ns, 0);
  // The same document in $GPUMEM_OOM_REPORT.
  std::ifstream in(report);
  ASSERT_TRUE(in.good());
  const nlohmann::json document = nlohmann::json::parse(in);
  EXPECT_EQ(document["schema"], "gpumem.attribution/1");
  ASSERT_EQ(document["snapshots"].size(), 1u);
  EXPECT_EQ(document["snapshots"][0]["what"], "oom");
  EXPECT_EQ(document["snapshots"][0]["failure"]["bytes"], 200000 * MiB);
  EXPECT_EQ(document["snapshots"][0]["live_bytes"], 500 * kMiB);
  EXPECT_EQ(document["snapshots"][0]["other_processes_age_s"], 0.0);
  EXPECT_EQ(document["snapshots"][0]["monotonic_ns"], oom->monotonic_ns);
  std::filesystem::remove(report);
  ::unsetenv("GPUMEM_OOM_REPORT");
}

TEST(Attribution, AnOutOfMemoryOutsideAttributionStillRecordsTheRequest) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter counter(0, gpumem::Source::exact);
  load_weights();
  const DeviceAllocation failed = huge_request();
  EXPECT_FALSE(failed.valid());
  const auto oom = gpumem::last_oom();
  ASSERT_TRUE(oom && oom->failure);
  EXPECT_FALSE(oom->attributed);
  EXPECT_TRUE(oom->blocks.empty());
  EXPECT_EQ(oom->failure->bytes, 200000 * MiB);
  EXPECT_EQ(oom->level_bytes, counter.read().current_bytes);
  EXPECT_GE(oom->level_bytes, 300 * kMiB);
}

TEST(Attribution, TheDocumentHasTheDocumentedShape) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::TraceOptions options;
  options.silent = true;
  options.ctx = "train";
  options.source = gpumem::Source::exact;
  options.attribute = true;
  options.no_cache = false;
  gpumem::GPUMemTrace trace(options);
  load_weights();
  activations();
  g_activations.clear();
  trace.stop();
  const auto snapshot = trace.peak_snapshot();  // kept from stop()
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->scope, "train");
  const nlohmann::json document = nlohmann::json::parse(snapshot->to_json());
  EXPECT_EQ(document["schema"], "gpumem.attribution/1");
  EXPECT_TRUE(document["command"].is_string());
  EXPECT_TRUE(document["host"].is_string());
  ASSERT_EQ(document["devices"].size(), 1u);
  EXPECT_EQ(document["devices"][0]["ordinal"], 0);
  EXPECT_EQ(document["devices"][0]["uuid"], "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(document["devices"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(document["devices"][0]["total_bytes"], 143771 * MiB);
  const auto& frames = document["frames"];
  ASSERT_FALSE(frames.empty());
  for (const auto& frame : frames) {
    for (const char* key : {"function", "file", "line", "module", "address", "language"}) {
      EXPECT_TRUE(frame.contains(key)) << key;
    }
    EXPECT_EQ(frame["language"], "native");
    EXPECT_EQ(frame["address"].get<std::string>().rfind("0x", 0), 0u);
  }
  for (const auto& stack : document["stacks"]) {
    ASSERT_TRUE(stack.is_array());
    for (const auto& index : stack) EXPECT_LT(index.get<std::size_t>(), frames.size());
  }
  ASSERT_EQ(document["snapshots"].size(), 1u);
  const auto& peak = document["snapshots"][0];
  EXPECT_EQ(peak["what"], "peak");
  EXPECT_EQ(peak["scope"], "train");
  EXPECT_EQ(peak["pid"], ::getpid());
  EXPECT_EQ(peak["device"], 0);
  EXPECT_TRUE(peak["time_s"].is_number());
  EXPECT_EQ(peak["live_bytes"], 500 * kMiB);
  EXPECT_GE(peak["level_bytes"].get<std::int64_t>(), 500 * kMiB);
  EXPECT_TRUE(peak["failure"].is_null());
  EXPECT_TRUE(peak["other_processes"].is_array());
  std::int64_t sum = 0;
  for (const auto& block : peak["blocks"]) {
    EXPECT_EQ(block["address"].get<std::string>().rfind("0x", 0), 0u);
    EXPECT_EQ(block["kind"], "device");
    EXPECT_LT(block["stack"].get<std::size_t>(), document["stacks"].size());
    EXPECT_TRUE(block["age_s"].is_number());
    EXPECT_EQ(block["pid"], ::getpid());
    sum += block["bytes"].get<std::int64_t>();
  }
  EXPECT_EQ(sum, 500 * kMiB);
  EXPECT_TRUE(document["timeline"].is_array());
}

template <class Fn>
Fn driver_symbol(const char* name) {
  void* cuda = ::dlopen(gpumem::testing::sim_path("libcuda.so.1").c_str(), RTLD_NOW | RTLD_NOLOAD);
  return cuda != nullptr ? reinterpret_cast<Fn>(::dlsym(cuda, name)) : nullptr;
}

// cuMemCreate's physical memory, mapped, released while mapped (it lives until the unmap).
[[gnu::noinline]] gpumem::abi::CUmemGenericAllocationHandle create_physical(
    gpumem::abi::CUdeviceptr* range) {
  using namespace gpumem::abi;
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 0;
  CUmemGenericAllocationHandle handle = 0;
  using Reserve =
      CUresult (*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long);
  EXPECT_EQ(driver_symbol<PFN_cuMemCreate>("cuMemCreate")(&handle, 64 * MiB, &prop, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(driver_symbol<Reserve>("cuMemAddressReserve")(range, 64 * MiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(driver_symbol<PFN_cuMemMap>("cuMemMap")(*range, 64 * MiB, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(driver_symbol<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);
  return handle;
}

TEST(Attribution, VmmPhysicalMemoryIsABlockUntilItIsUnmapped) {
  using namespace gpumem::abi;
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  spike();  // a current context, and 50 MiB of plain memory
  CUdeviceptr range = 0;
  create_physical(&range);
  g_spike.clear();
  const auto peak = counter.peak_snapshot();
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->live_bytes, 114 * kMiB);
  EXPECT_EQ(held_by(*peak, "create_physical"), 64 * kMiB);
  std::size_t vmm_blocks = 0;
  for (const gpumem::LiveBlock& block : peak->blocks) {
    if (block.kind == gpumem::BlockKind::vmm) {
      ++vmm_blocks;
      EXPECT_EQ(block.bytes, 64 * MiB);
    }
  }
  EXPECT_EQ(vmm_blocks, 1u);
  ASSERT_EQ(driver_symbol<PFN_cuMemUnmap>("cuMemUnmap")(range, 64 * MiB), CUDA_SUCCESS);
  counter.reset();
  const auto after = counter.peak_snapshot();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->live_bytes, 0);
  EXPECT_TRUE(after->blocks.empty());
}

// A stream-ordered allocation from the device's default pool, freed at once: the pool keeps it.
[[gnu::noinline]] void pooled_scratch() {
  using namespace gpumem::abi;
  CUdeviceptr block = 0;
  ASSERT_EQ(driver_symbol<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&block, 24 * MiB, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(driver_symbol<PFN_cuMemFreeAsync>("cuMemFreeAsync")(block, nullptr), CUDA_SUCCESS);
}

TEST(Attribution, APoolsReservationIsABlockNamedByWhatMadeItGrow) {
  using namespace gpumem::abi;
  SimGpu gpu;
  Cleanup cleanup;
  spike();  // a current context
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  pooled_scratch();
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(driver_symbol<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, 0), CUDA_SUCCESS);
  std::uint64_t reserved = 0;
  ASSERT_EQ(driver_symbol<PFN_cuMemPoolGetAttribute>("cuMemPoolGetAttribute")(
                pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
            CUDA_SUCCESS);
  ASSERT_GE(reserved, 24 * MiB);
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  std::uint64_t pool_bytes = 0;
  for (const gpumem::LiveBlock& block : snapshot->blocks) {
    if (block.kind == gpumem::BlockKind::pool) pool_bytes += block.bytes;
  }
  EXPECT_EQ(pool_bytes, reserved);  // what the simulated driver reserves for the pool
  EXPECT_EQ(held_by(*snapshot, "pooled_scratch"), static_cast<std::int64_t>(reserved));
  // The spike was allocated before any exact counter subscribed: no event saw it, and it is
  // only in the level (reconciled from NVML), not a block.
  EXPECT_EQ(snapshot->live_bytes, static_cast<std::int64_t>(reserved));
  EXPECT_GE(snapshot->level_bytes, snapshot->live_bytes);
}

// A graph that allocates 5 MiB, instantiated and launched: the device's graph reservation grows.
[[gnu::noinline]] void graph_step() {
  using namespace gpumem::abi;
  using GraphCreate = CUresult (*)(CUgraph*, unsigned);
  using AddAlloc = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS*);
  using AddFree = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, std::size_t, CUdeviceptr);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using Launch = CUresult (*)(CUgraphExec, CUstream);
  CUgraph graph = nullptr;
  ASSERT_EQ(driver_symbol<GraphCreate>("cuGraphCreate")(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = 1;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = 5 * MiB;
  CUgraphNode node = nullptr;
  ASSERT_EQ(driver_symbol<AddAlloc>("cuGraphAddMemAllocNode")(&node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  ASSERT_EQ(driver_symbol<AddFree>("cuGraphAddMemFreeNode")(&node, graph, nullptr, 0, params.dptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(driver_symbol<Instantiate>("cuGraphInstantiateWithFlags")(&exec, graph, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(driver_symbol<Launch>("cuGraphLaunch")(exec, nullptr), CUDA_SUCCESS);
}

TEST(Attribution, TheGraphReservationIsABlockUntilTrimmed) {
  using namespace gpumem::abi;
  SimGpu gpu;
  Cleanup cleanup;
  spike();  // a current context
  g_spike.clear();
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  graph_step();
  std::uint64_t reserved = 0;
  ASSERT_EQ(driver_symbol<PFN_cuDeviceGetGraphMemAttribute>("cuDeviceGetGraphMemAttribute")(
                0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved),
            CUDA_SUCCESS);
  ASSERT_GT(reserved, 0u);
  using Trim = CUresult (*)(CUdevice);
  ASSERT_EQ(driver_symbol<Trim>("cuDeviceGraphMemTrim")(0), CUDA_SUCCESS);
  const auto peak = counter.peak_snapshot();
  ASSERT_TRUE(peak);
  ASSERT_EQ(peak->blocks.size(), 1u);
  EXPECT_EQ(peak->blocks.front().kind, gpumem::BlockKind::graph);
  EXPECT_EQ(peak->blocks.front().bytes, reserved);
  EXPECT_EQ(held_by(*peak, "graph_step"), static_cast<std::int64_t>(reserved));
  counter.reset();
  const auto trimmed = counter.peak_snapshot();
  ASSERT_TRUE(trimmed);
  EXPECT_TRUE(trimmed->blocks.empty());
}

TEST(Attribution, TheEnvironmentTurnsItOnForEveryExactCounter) {
  SimGpu gpu;
  Cleanup cleanup;
  ::setenv("GPUMEM_ATTRIBUTE", "1", 1);
  gpumem::PeakCounter counter(0, gpumem::Source::exact);
  ::unsetenv("GPUMEM_ATTRIBUTE");
  EXPECT_TRUE(counter.attributing());
  spike();
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(held_by(*snapshot, "spike"), 50 * kMiB);
}

std::size_t python_frames(gpumem::PythonFrame* frames, std::size_t capacity) noexcept {
  if (capacity < 2) return 0;
  frames[0] = {"forward", "model.py", 17};
  frames[1] = {"<module>", "train.py", 3};
  return 2;
}

TEST(Attribution, PythonFramesFromTheProviderJoinTheStack) {
  SimGpu gpu;
  Cleanup cleanup;
  gpumem::set_python_frame_provider(&python_frames);
  gpumem::PeakCounter counter(0, gpumem::Source::exact, gpumem::Attribution::on);
  spike();
  gpumem::set_python_frame_provider(nullptr);
  const auto snapshot = counter.peak_snapshot();
  ASSERT_TRUE(snapshot);
  ASSERT_EQ(snapshot->blocks.size(), 1u);
  const auto& stack = snapshot->stacks.at(snapshot->blocks.front().stack.value());
  std::vector<gpumem::StackFrame> python;
  for (const std::size_t frame : stack) {
    if (snapshot->frames.at(frame).python) python.push_back(snapshot->frames.at(frame));
  }
  ASSERT_EQ(python.size(), 2u);
  EXPECT_EQ(python[0].function, "forward");
  EXPECT_EQ(python[0].file, "model.py");
  EXPECT_EQ(python[0].line, 17);
  EXPECT_EQ(python[1].function, "<module>");
  EXPECT_FALSE(python[0].address);
  const nlohmann::json document = nlohmann::json::parse(snapshot->to_json());
  int python_in_document = 0;
  for (const auto& frame : document["frames"]) {
    if (frame["language"] == "python") {
      ++python_in_document;
      EXPECT_TRUE(frame["address"].is_null());
      EXPECT_TRUE(frame["module"].is_null());
    }
  }
  EXPECT_EQ(python_in_document, 2);
}

}  // namespace
