// The process footprint: what the exact source reports is what the driver holds for the process
// (context and modules, VMM memory until released and unmapped, runtime-only calls), and the
// device-used figures beside it equal the simulated device's total - free.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "driver/cupti.hpp"
#include "gpumem/allocate.hpp"
#include "gpumem/device.hpp"
#include "gpumem/peak.hpp"
#include "gpumem/trace.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/sim_driver.hpp"

namespace gpumem {
namespace {

using namespace gpumem::abi;
using testing::mib;
using testing::MiB;
using testing::sim_symbol;
using testing::SimGpu;

// One GPU whose contexts cost 500 MiB, as a real driver's do (hundreds of MB).
constexpr const char* kContextGpu = R"({
  "devices": [
    {"name": "NVIDIA H200", "uuid": "GPU-cccccccc-3333-4000-8000-000000000000",
     "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542,
     "context_mib": 500}
  ]})";

// This process's memory on CUDA device 0 as the simulated driver's NVML lists it.
std::int64_t own_usage() {
  for (const ProcessMemory& process : device_processes(0)) {
    if (process.pid == static_cast<unsigned>(::getpid())) {
      return static_cast<std::int64_t>(process.used_bytes.value_or(0));
    }
  }
  return 0;
}

std::int64_t device_used_now() {
  const GPUMemoryBytes memory = gpu_mem_get_bytes(0).value();
  return static_cast<std::int64_t>(memory.total - memory.free);
}

// fastai.utils.mem's first example, started before CUDA: "create context + allocate 10 MB".
TEST(Footprint, ATraceStartedBeforeCudaCountsTheContext) {
  SimGpu gpu(kContextGpu);
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  const std::int64_t device_before = device_used_now();
  DeviceAllocation block = device_allocate(10 * MiB, 0);  // creates the context first
  ASSERT_TRUE(block.valid());

  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.quantity, Quantity::process_footprint);
  EXPECT_NE(reading.covers & coverage::context, 0u);
  EXPECT_EQ(reading.start_bytes, 0);
  EXPECT_EQ(reading.current_bytes, mib(510));
  EXPECT_EQ(reading.peak_bytes, mib(510));
  EXPECT_EQ(reading.current_bytes, own_usage());
  // Alone on the device, the footprint's rise is the device's.
  EXPECT_EQ(reading.device_used_start_bytes, device_before);
  EXPECT_EQ(reading.device_used_current_bytes - reading.device_used_start_bytes, mib(510));
  EXPECT_EQ(reading.device_used_peak_bytes, device_before + mib(510));
}

TEST(Footprint, TheTraceReportsTheContextAsFastaiDid) {
  SimGpu gpu(kContextGpu);
  std::string line;
  TraceOptions options;
  options.device = 0;
  options.sink = [&](std::string_view text) { line = text; };
  GPUMemTrace trace(options);
  DeviceAllocation block = device_allocate(10 * MiB, 0);
  trace.report("ctx");
  EXPECT_EQ(line, "△Used Peaked MB:    510      0 (ctx)");
  EXPECT_EQ(trace.data_bytes().quantity, Quantity::process_footprint);
}

TEST(Footprint, StartedAfterTheContextTheContextIsInTheStartNotTheDelta) {
  SimGpu gpu(kContextGpu);
  testing::use_device(0);
  PeakCounter counter(0, Source::exact);
  DeviceAllocation block = device_allocate(10 * MiB, 0);
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.start_bytes, mib(500));
  EXPECT_EQ(reading.current_bytes, mib(510));
  EXPECT_EQ(reading.current_bytes, own_usage());
}

// CUDA's vectorAddMMAP pattern: release the handle while it is mapped; the memory lives until
// the last unmap.
TEST(Footprint, VmmMemoryLivesUntilReleasedAndUnmapped) {
  SimGpu gpu;
  testing::use_device(0);
  PeakCounter counter(0, Source::exact);
  peak::Channel& exact = *peak::channel(peak::Stream::exact, 0);
  const std::int64_t before = exact.level();

  CUresult result = CUDA_SUCCESS;
  std::uint64_t correlation = 0;
  CUpti_CallbackData call{};
  call.functionReturnValue = &result;
  call.correlationData = &correlation;
  auto send = [&](int site, CUpti_CallbackId cbid, const void* params) {
    call.callbackSite = site;
    call.functionParams = params;
    peak::on_driver_call(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &call);
  };
  CUmemGenericAllocationHandle handle = 0x5000;
  CUmemAllocationProp prop{};
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 0;
  const cuMemCreate_params create{&handle, 4 * MiB, &prop, 0};
  send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &create);
  constexpr CUdeviceptr kRange = 1ull << 44;
  const cuMemMap_params map{kRange, 4 * MiB, 0, handle, 0};
  send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemMap, &map);
  const cuMemRetainAllocationHandle_params retain{&handle, reinterpret_cast<void*>(kRange)};
  send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle, &retain);
  const cuMemRelease_params release{handle};
  for (int references = 2; references > 0; --references) {
    send(CUPTI_API_ENTER, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &release);
    send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &release);
    EXPECT_EQ(exact.level() - before, mib(4)) << "released but still mapped";
  }
  const cuMemUnmap_params unmap{kRange, 4 * MiB};
  result = CUDA_ERROR_INVALID_VALUE;  // a failed unmap changes nothing
  send(CUPTI_API_ENTER, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  EXPECT_EQ(exact.level() - before, mib(4));
  result = CUDA_SUCCESS;
  send(CUPTI_API_ENTER, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  send(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  EXPECT_EQ(exact.level() - before, 0);
}

// Whether or not real CUDA raises driver callbacks for the runtime's own calls, a cudaMalloc
// counts exactly once.
TEST(Footprint, ARuntimeCallWithoutDriverCallbacksCountsOnce) {
  SimGpu gpu;
  testing::use_device(0);
  PeakCounter counter(0, Source::exact);
  peak::Channel& exact = *peak::channel(peak::Stream::exact, 0);
  const std::int64_t before = exact.level();
  int result = 0;
  std::uint64_t correlation = 0;
  void* block = reinterpret_cast<void*>(std::uintptr_t{1} << 43);
  CUpti_CallbackData call{};
  call.functionReturnValue = &result;
  call.correlationData = &correlation;
  const cudaMalloc_v3020_params malloc_params{&block, 3 * MiB};
  const cudaFree_v3020_params free_params{block};
  auto send = [&](int site, CUpti_CallbackId cbid, const void* params) {
    call.callbackSite = site;
    call.functionParams = params;
    peak::on_driver_call(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &call);
  };
  send(CUPTI_API_ENTER, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &malloc_params);
  send(CUPTI_API_EXIT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &malloc_params);
  EXPECT_EQ(exact.level() - before, mib(3));
  send(CUPTI_API_ENTER, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &free_params);
  send(CUPTI_API_EXIT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &free_params);
  EXPECT_EQ(exact.level() - before, 0);

  // With the driver's callback inside it, the runtime call adds nothing of its own.
  using CudaMalloc = int (*)(void**, size_t);
  using CudaFree = int (*)(void*);
  auto cuda_malloc = sim_symbol<CudaMalloc>("libcudart.so.13", "cudaMalloc");
  auto cuda_free = sim_symbol<CudaFree>("libcudart.so.13", "cudaFree");
  void* real = nullptr;
  ASSERT_EQ(cuda_malloc(&real, 6 * MiB), 0);
  EXPECT_EQ(exact.level() - before, mib(6));
  ASSERT_EQ(cuda_free(real), 0);
  EXPECT_EQ(counter.read().peak_bytes - counter.read().start_bytes, mib(6));
}

// A container without libnvidia-ml, or a driver/library mismatch: CUPTI and the driver still
// count every allocation; the reading says it lacks the context.
TEST(Footprint, ExactWithoutNvml) {
  SimGpu gpu(kContextGpu, "nvml_init=18");
  PeakCounter counter(0, Source::exact);
  ASSERT_EQ(counter.source(), Source::exact);
  DeviceAllocation block = device_allocate(10 * MiB, 0);
  ASSERT_TRUE(block.valid());
  const PeakReading reading = counter.read();
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, mib(10));
  EXPECT_EQ(reading.covers & coverage::context, 0u);
  EXPECT_NE(describe(reading).find("misses the CUDA context"), std::string::npos);
  // The device's used memory comes from the driver (cuMemGetInfo) once a context exists.
  EXPECT_EQ(reading.device_used_current_bytes, mib(542 + 510));
  ASSERT_EQ(device_count(), 1);
  const std::optional<DeviceInfo> info = device_info(0);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->uuid, "GPU-cccccccc-3333-4000-8000-000000000000");
  EXPECT_EQ(info->name, "NVIDIA H200");
  EXPECT_EQ(static_cast<std::int64_t>(info->memory.total), mib(143771));
}

// CUPTI the program has loaded already (as torch.profiler would have) is the one gpumem uses.
TEST(Footprint, CuptiAlreadyLoadedIsPreferred) {
  SimGpu gpu;
  ::unsetenv("GPUMEM_CUPTI_LIBRARY");
  testing::open_sim("libcupti.so.13");
  const driver::Cupti& cupti = driver::cupti();
  ASSERT_TRUE(cupti.loaded) << cupti.why;
  EXPECT_EQ(cupti.path, "libcupti.so.13");
  EXPECT_EQ(cupti.choice, "already loaded by the program");
  PeakCounter counter(0, Source::exact);
  EXPECT_EQ(counter.source(), Source::exact);
}

}  // namespace
}  // namespace gpumem
