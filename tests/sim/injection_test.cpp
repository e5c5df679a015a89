// CUDA_INJECTION64_PATH: cuInit loads the library once and calls InitializeInjection, and the
// CUPTI it subscribes to sees the driver instance the program loaded by absolute path.
#include <gtest/gtest.h>

#include <atomic>

#include "driver/abi/cuda.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

TEST(simInjection, CuInitRunsTheInjectionOnce) {
  SimGpu gpu;
  ::setenv("CUDA_INJECTION64_PATH", GPUMEM_SIM_TEST_INJECTION, 1);
  SimLibrary cuda("libcuda.so.1");
  auto init = cuda.get<PFN_cuInit>("cuInit");
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  void* probe = ::dlopen(GPUMEM_SIM_TEST_INJECTION, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(probe, nullptr) << "cuInit did not load the injection";
  auto* calls = static_cast<std::atomic<int>*>(::dlsym(probe, "gpumem_sim_probe_calls"));
  auto* allocations =
      static_cast<std::atomic<int>*>(::dlsym(probe, "gpumem_sim_probe_allocations"));
  ASSERT_NE(calls, nullptr);
  EXPECT_EQ(calls->load(), 1);

  CUcontext context = nullptr;
  ASSERT_EQ(cuda.get<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&context, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(cuda.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuda.get<PFN_cuMemAlloc>("cuMemAlloc_v2")(&p, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuda.get<PFN_cuMemAlloc>("cuMemAlloc_v2")(&p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(allocations->load(), 2);
}

TEST(simInjection, NoVariableNoInjection) {
  SimGpu gpu;
  ::unsetenv("CUDA_INJECTION64_PATH");
  SimLibrary cuda("libcuda.so.1");
  ASSERT_EQ(cuda.get<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  EXPECT_EQ(::dlopen(GPUMEM_SIM_TEST_INJECTION, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST(simInjection, UnloadableInjectionIsNotFatal) {
  SimGpu gpu;
  ::setenv("CUDA_INJECTION64_PATH", "/nonexistent/injection.so", 1);
  SimLibrary cuda("libcuda.so.1");
  EXPECT_EQ(cuda.get<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
}

}  // namespace
}  // namespace gpumem::testing
