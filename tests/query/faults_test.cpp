// Every fault gives fastai.utils.mem's fallback values and a diagnostic, never a crash or an
// exception.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpumem/gpumem.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

bool has_diagnostic(const std::string& text) {
  const auto all = diagnostics();
  return std::find(all.begin(), all.end(), text) != all.end();
}

bool has_diagnostic_starting(const std::string& prefix) {
  const auto all = diagnostics();
  return std::any_of(all.begin(), all.end(),
                     [&](const std::string& d) { return d.starts_with(prefix); });
}

void expect_no_gpu_answers() {
  EXPECT_EQ(gpu_mem_get(), GPUMemory{});
  EXPECT_EQ(gpu_mem_get(0), GPUMemory{});
  EXPECT_FALSE(gpu_mem_get_bytes(0).has_value());
  EXPECT_TRUE(gpu_mem_get_all().empty());
  EXPECT_EQ(gpu_mem_get_free(), 0);
  EXPECT_EQ(gpu_mem_get_used(), 0);
  EXPECT_EQ(gpu_mem_get_free_no_cache(), 0);
  EXPECT_EQ(gpu_mem_get_used_no_cache(), 0);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{std::nullopt, 0}));
  EXPECT_FALSE(gpu_handle().valid());
  EXPECT_EQ(gpu_mem_get_used_fast(gpu_handle()), 0);
  EXPECT_EQ(device_count(), 0);
  EXPECT_TRUE(devices().empty());
  EXPECT_FALSE(device_info(0).has_value());
  EXPECT_TRUE(device_processes(0).empty());
  EXPECT_FALSE(nvml_available());
  EXPECT_EQ(driver_version(), "");
}

TEST(NoDriver, NvmlMissing) {
  SimGpu sim;
  ::setenv("GPUMEM_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  expect_no_gpu_answers();
  EXPECT_TRUE(has_diagnostic_starting("NVML not found (/nonexistent/libnvidia-ml.so.1"));
}

TEST(NoDriver, NothingAtAll) {
  SimGpu sim;
  ::setenv("GPUMEM_NVML_LIBRARY", "/nonexistent", 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", "/nonexistent", 1);
  expect_no_gpu_answers();
  EXPECT_FALSE(preload());
  EXPECT_FALSE(device_allocate(MiB).valid());
  EXPECT_EQ(active_device(), 0);
  EXPECT_FALSE(cuda_available());
  EXPECT_TRUE(has_diagnostic_starting("NVML not found ("));
  EXPECT_TRUE(has_diagnostic_starting("CUDA driver not found ("));
}

TEST(NoDriver, CudaMissingNvmlStillAnswers) {
  SimGpu sim;
  ::setenv("GPUMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  EXPECT_FALSE(preload());
  EXPECT_FALSE(cuda_available());
  EXPECT_TRUE(has_diagnostic_starting("CUDA driver not found (/nonexistent/libcuda.so.1"));
}

TEST(NvmlInit, VersionMismatch) {
  SimGpu sim(kTwoGpus, "nvml_init=18");
  expect_no_gpu_answers();
  EXPECT_TRUE(
      has_diagnostic("NVML: driver/library version mismatch (NVML_ERROR_LIB_RM_VERSION_MISMATCH)"));
}

TEST(NvmlInit, DriverNotLoaded) {
  SimGpu sim(kTwoGpus, "nvml_init=9");
  expect_no_gpu_answers();
  EXPECT_TRUE(has_diagnostic("NVML: initialisation failed (NVML_ERROR_DRIVER_NOT_LOADED)"));
}

TEST(CudaInit, FailureLeavesNvmlWorking) {
  SimGpu sim(kTwoGpus, "cuda_init=100");
  EXPECT_FALSE(preload());
  EXPECT_FALSE(device_allocate(MiB, 0).valid());
  EXPECT_TRUE(has_diagnostic("CUDA: cuInit failed (CUDA_ERROR_NO_DEVICE)"));
  EXPECT_EQ(gpu_mem_get(0), (GPUMemory{kH200Total, kH200Total - kH200Reserved, kH200Reserved}));
  EXPECT_EQ(device_count(), 2);
}

TEST(CudaInit, StubLibrary) {
  SimGpu sim(kTwoGpus, "cuda_init=34");
  EXPECT_FALSE(preload());
  EXPECT_TRUE(has_diagnostic("CUDA: cuInit failed (CUDA_ERROR_STUB_LIBRARY)"));
  EXPECT_EQ(gpu_mem_get(1).total, kA100Total);
}

TEST(OldDriver, UnversionedSymbolsOnly) {
  SimGpu sim;
  ::setenv("GPUMEM_NVML_LIBRARY", sim_path("old/libnvidia-ml.so.1").c_str(), 1);
  // v1 memory info: NVML's used includes the reservation, which is not reported apart; the MB
  // figures are the same as with v2 (used = total − free).
  EXPECT_EQ(gpu_mem_get(0), (GPUMemory{kH200Total, kH200Total - kH200Reserved, kH200Reserved}));
  EXPECT_EQ(gpu_mem_get_bytes(0)->reserved, 0u);
  EXPECT_EQ(gpu_mem_get(1).total, kA100Total);
  DeviceAllocation block = device_allocate(10 * MiB, 1);
  ASSERT_TRUE(block.valid());
  // Mapped through CUDA by bus id (the old NVML cannot look up UUIDs).
  EXPECT_EQ(gpu_mem_get(1).used, kA100Reserved + 10);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved);
  const auto processes = device_processes(1);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].pid, static_cast<unsigned>(::getpid()));
  EXPECT_EQ(processes[0].used_bytes, 10 * MiB);
}

TEST(NvmlMemory, V1Only) {
  SimGpu sim(kTwoGpus, "nvml_memory=v1");
  EXPECT_EQ(gpu_mem_get(0), (GPUMemory{kH200Total, kH200Total - kH200Reserved, kH200Reserved}));
  const auto bytes = gpu_mem_get_bytes(1);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->used, kA100Reserved * MiB);
  EXPECT_EQ(bytes->reserved, 0u);
  DeviceAllocation block = device_allocate(3 * MiB, 0);
  EXPECT_EQ(gpu_mem_get_used_fast(gpu_handle(0)), kH200Reserved + 3);
}

TEST(NvmlMemory, V2Only) {
  SimGpu sim(kTwoGpus, "nvml_memory=v2");
  EXPECT_EQ(gpu_mem_get(0), (GPUMemory{kH200Total, kH200Total - kH200Reserved, kH200Reserved}));
  EXPECT_EQ(gpu_mem_get_bytes(0)->reserved, kH200Reserved * MiB);
  DeviceAllocation block = device_allocate(3 * MiB, 0);
  EXPECT_EQ(gpu_mem_get_used_fast(gpu_handle(0)), kH200Reserved + 3);
  EXPECT_EQ(gpu_mem_get_used_bytes_fast(gpu_handle(0)), 3 * MiB);
}

TEST(LostDevice, MidRunAndBack) {
  SimGpu sim;
  const GpuHandle h200 = gpu_handle(0);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  sim.set_lost(1, true);  // NVML 1 is ordinal 0
  EXPECT_EQ(gpu_mem_get(0), GPUMemory{});
  EXPECT_EQ(gpu_mem_get_used_fast(h200), 0);
  EXPECT_EQ(last_diagnostic(), "GPU 0 lost (NVML_ERROR_GPU_IS_LOST)");
  // The other device keeps answering.
  EXPECT_EQ(gpu_mem_get(1), (GPUMemory{kA100Total, kA100Total - kA100Reserved, kA100Reserved}));
  const auto all = gpu_mem_get_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], GPUMemory{});
  EXPECT_EQ(all[1].total, kA100Total);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{1, kA100Total - kA100Reserved}));
  EXPECT_TRUE(device_processes(0).empty());
  sim.set_lost(1, false);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  EXPECT_EQ(gpu_mem_get_used_fast(h200), kH200Reserved);
  EXPECT_EQ(gpu_with_max_free_mem(), (MaxFreeMemory{0, kH200Total - kH200Reserved}));
  DeviceAllocation block = device_allocate(3 * MiB, 0);
  EXPECT_EQ(gpu_mem_get_used_fast(h200), kH200Reserved + 3);  // the handle reads the device again
  const auto messages = diagnostics();
  EXPECT_EQ(std::count(messages.begin(), messages.end(), "GPU 0 lost (NVML_ERROR_GPU_IS_LOST)"), 1);
}

TEST(LostDevice, LostBeforeFirstUse) {
  SimGpu sim(kTwoGpus, "lost=0");  // the A100, ordinal 1
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  EXPECT_EQ(gpu_mem_get(1), GPUMemory{});
}

TEST(LostDevice, CudaAllocationOnALostDevice) {
  SimGpu sim;
  sim.set_lost(1, true);
  EXPECT_FALSE(device_allocate(MiB, 0).valid());
  EXPECT_TRUE(device_allocate(MiB, 1).valid());
}

TEST(BadEnvironment, GarbageVisibleDevicesNeverCrashes) {
  SimGpu sim;
  for (const char* text : {",,,", "GPU-", "MIG-", "99999999999999999999999", "-", "+", " , 1",
                           "\x01\x02", "0,1,0,1", "GPU-bbbb,GPU-bbbb"}) {
    ::setenv("CUDA_VISIBLE_DEVICES", text, 1);
    EXPECT_LE(device_count(), 2) << text;
    for (int id = -2; id < 3; ++id) (void)gpu_mem_get(id);
  }
  ::setenv("CUDA_VISIBLE_DEVICES", " , 1", 1);
  EXPECT_EQ(device_count(), 0);
  // Garbage ends the list, as in CUDA: what came before it is still seen.
  ::setenv("CUDA_VISIBLE_DEVICES", "1,\x01", 1);
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(gpu_mem_get(0).total, kA100Total);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(BadEnvironment, EmptyLibraryVariableMeansSystemDefault) {
  SimGpu sim;
  ::setenv("GPUMEM_NVML_LIBRARY", "", 1);
  // No system NVML here (or a real one): either way no crash, and a diagnostic if absent.
  (void)gpu_mem_get(0);
  if (!nvml_available()) {
    EXPECT_TRUE(has_diagnostic_starting("NVML"));
  }
}

}  // namespace
}  // namespace gpumem
