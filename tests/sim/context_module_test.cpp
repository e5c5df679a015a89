// Contexts and modules as the Driver API reference describes them: every context costs the
// device's context memory (primary, cuCtxCreate v2/v3/v4), cuCtxDestroy frees what was allocated
// in it but not VMM or stream-ordered memory, cuDevicePrimaryCtxReset destroys the primary
// context's resources, modules take their image rounded up to 2 MiB (at first use under lazy
// loading), and CUPTI's resource domain announces contexts and modules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim_driver.hpp"

namespace gpumem::testing {
namespace {

// One device (NVML 0 = CUDA 0) whose contexts cost 300 MiB.
constexpr const char* kContextGpu =
    R"({"devices": [{"name": "A", "total_mib": 81920, "reserved_mib": 100, "context_mib": 300}]})";

using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned, CUdevice);
using CtxCreateV3 = CUresult (*)(CUcontext*, void*, int, unsigned, CUdevice);
using CtxCreateV4 = CUresult (*)(CUcontext*, void*, unsigned, CUdevice);
using CtxDestroy = CUresult (*)(CUcontext);
using ModuleLoadData = CUresult (*)(CUmodule*, const void*);
using ModuleLoad = CUresult (*)(CUmodule*, const char*);
using ModuleUnload = CUresult (*)(CUmodule);
using ModuleGetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);

TEST(simContext, EveryCreatedContextCostsContextMemory) {
  SimGpu gpu(kContextGpu);
  Driver d;
  ASSERT_EQ(d.fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  EXPECT_FALSE(d.listed(0));
  CUcontext first = nullptr, second = nullptr, third = nullptr;
  ASSERT_EQ(d.fn<CtxCreateV4>("cuCtxCreate_v4")(&first, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 300 * MiB);
  EXPECT_EQ(d.process_used(0), 300 * MiB);
  EXPECT_EQ(d.cuda_used(), 400 * MiB);  // total − free: the reserved 100 MiB too
  ASSERT_EQ(d.fn<CtxCreateV2>("cuCtxCreate_v2")(&second, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CtxCreateV3>("cuCtxCreate_v3")(&third, nullptr, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 900 * MiB);
  // The new context is pushed: current, with the older ones beneath it.
  CUcontext current = nullptr;
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, third);
  CUdeviceptr p = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&p, 10 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 910 * MiB);
  // Destroying the current context pops it and frees what was allocated in it.
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(third), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 600 * MiB);
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, second);
  EXPECT_EQ(d.fn<PFN_cuMemFree>("cuMemFree_v2")(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(third), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(first), CUDA_SUCCESS);  // not current: stays
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, second);
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(second), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 0u);
  EXPECT_FALSE(d.listed(0));  // nothing left: NVML no longer lists the process
}

TEST(simContext, PushAndPop) {
  SimGpu gpu(kContextGpu);
  Driver d;
  d.use(0);
  CUcontext primary = nullptr, created = nullptr, popped = nullptr, current = nullptr;
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&primary), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CtxCreateV2>("cuCtxCreate_v2")(&created, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuCtxPopCurrent>("cuCtxPopCurrent_v2")(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  ASSERT_EQ(d.fn<PFN_cuCtxPushCurrent>("cuCtxPushCurrent_v2")(created), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  // The primary context is not cuCtxDestroy's to destroy.
  EXPECT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(primary), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(d.process_used(0), 600 * MiB);
}

TEST(simContext, DestroyKeepsVmmAndPoolMemory) {
  SimGpu gpu(kContextGpu);
  Driver d;
  ASSERT_EQ(d.fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(d.fn<CtxCreateV4>("cuCtxCreate_v4")(&context, nullptr, 0, 0), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAllocAsync>("cuMemAllocAsync")(&block, 3 * MiB, nullptr), CUDA_SUCCESS);
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 0;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(d.fn<PFN_cuMemCreate>("cuMemCreate")(&handle, 8 * MiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), (300 + 4 + 8) * MiB);
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(context), CUDA_SUCCESS);
  // "cuCtxDestroy() will not destroy memory allocations by cuMemCreate(), cuMemAllocAsync()".
  EXPECT_EQ(d.process_used(0), 12 * MiB);
  EXPECT_EQ(d.nvml_used(0), 12 * MiB);
  ASSERT_EQ(d.fn<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 4 * MiB);
}

TEST(simContext, PrimaryResetDestroysItsResources) {
  SimGpu gpu(kContextGpu);
  Driver d;
  d.use(0);
  CUdeviceptr p = 0;
  ASSERT_EQ(d.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&p, 64 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 364 * MiB);
  ASSERT_EQ(d.fn<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxReset_v2")(0), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 0u);
  EXPECT_FALSE(d.listed(0));
  unsigned flags = 0;
  int active = 1;
  ASSERT_EQ(d.fn<PFN_cuDevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState")(0, &flags, &active),
            CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  // "It is safe for other modules to call cuDevicePrimaryCtxRelease() even after resetting".
  EXPECT_EQ(d.fn<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxRelease_v2")(0), CUDA_SUCCESS);
  d.use(0);  // a new primary context
  EXPECT_EQ(d.process_used(0), 300 * MiB);
}

TEST(simContext, RuntimeRecreatesAResetPrimaryContext) {
  SimGpu gpu(kContextGpu);
  SimLibrary cudart("libcudart.so.13");
  auto set_device = cudart.get<int (*)(int)>("cudaSetDevice");
  ASSERT_EQ(set_device(0), 0);
  Driver d;
  EXPECT_EQ(d.process_used(0), 300 * MiB);
  ASSERT_EQ(d.fn<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxReset_v2")(0), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 0u);
  ASSERT_EQ(set_device(0), 0);
  EXPECT_EQ(d.process_used(0), 300 * MiB);
  EXPECT_EQ(d.cuda_used(), 400 * MiB);
}

TEST(simContext, ResourceCallbacksForContexts) {
  SimGpu gpu(kContextGpu);
  ResourceRecorder recorder;
  // The runtime creates the primary context implicitly: CONTEXT_CREATED still fires.
  SimLibrary cudart("libcudart.so.13");
  void* block = nullptr;
  ASSERT_EQ(cudart.get<int (*)(void**, std::size_t)>("cudaMalloc")(&block, MiB), 0);
  Driver d;
  CUcontext primary = nullptr, created = nullptr;
  ASSERT_EQ(d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&primary), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CtxCreateV4>("cuCtxCreate_v4")(&created, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(created), CUDA_SUCCESS);
  const auto events = recorder.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].cbid, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  EXPECT_EQ(events[0].context, primary);
  EXPECT_EQ(events[1].cbid, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  EXPECT_EQ(events[1].context, created);
  EXPECT_EQ(events[2].cbid, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  EXPECT_EQ(events[2].context, created);
}

void count_resource(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const void*) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE)
    static_cast<std::vector<CUpti_CallbackId>*>(userdata)->push_back(cbid);
}

TEST(simContext, ResourceCallbacksEnabledOneByOne) {
  SimGpu gpu(kContextGpu);
  Driver d;
  ASSERT_EQ(d.fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
  SimLibrary cupti("libcupti.so.13");
  std::vector<CUpti_CallbackId> seen;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.get<PFN_cuptiSubscribe>("cuptiSubscribe")(&s, &count_resource, &seen),
            CUPTI_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiEnableCallback>("cuptiEnableCallback")(
                1, s, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
            CUPTI_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(d.fn<CtxCreateV2>("cuCtxCreate_v2")(&context, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.fn<CtxDestroy>("cuCtxDestroy_v2")(context), CUDA_SUCCESS);
  ASSERT_EQ(cupti.get<PFN_cuptiUnsubscribe>("cuptiUnsubscribe")(s), CUPTI_SUCCESS);
  EXPECT_EQ(seen, std::vector<CUpti_CallbackId>{CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING});
}

// A PTX text image: its size is its length with the terminating NUL.
std::string ptx(std::size_t bytes) {
  std::string text = ".version 8.0\n.target sm_90\n";
  text.resize(bytes - 1, ' ');
  return text;
}

TEST(simModule, LazyLoadingTakesMemoryAtFirstFunction) {
  ::unsetenv("CUDA_MODULE_LOADING");  // LAZY is the default
  SimGpu gpu(kContextGpu);
  Driver d;
  d.use(0);
  ResourceRecorder recorder;
  const std::string image = ptx(3 * MiB);
  CUmodule module = nullptr;
  ASSERT_EQ(d.fn<ModuleLoadData>("cuModuleLoadData")(&module, image.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 300 * MiB);  // nothing loaded yet
  CUfunction kernel = nullptr, again = nullptr;
  ASSERT_EQ(d.fn<ModuleGetFunction>("cuModuleGetFunction")(&kernel, module, "add"), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 304 * MiB);  // 3 MiB + 1 byte, in 2 MiB pages
  EXPECT_EQ(d.nvml_used(0), 304 * MiB);
  EXPECT_EQ(d.cuda_used(), 404 * MiB);
  ASSERT_EQ(d.fn<ModuleGetFunction>("cuModuleGetFunction")(&again, module, "add"), CUDA_SUCCESS);
  EXPECT_EQ(again, kernel);
  EXPECT_EQ(d.process_used(0), 304 * MiB);
  ASSERT_EQ(d.fn<ModuleUnload>("cuModuleUnload")(module), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 300 * MiB);
  EXPECT_EQ(d.fn<ModuleUnload>("cuModuleUnload")(module), CUDA_ERROR_INVALID_HANDLE);

  const auto events = recorder.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].cbid, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  EXPECT_EQ(events[0].cubin_size, 3 * MiB);
  EXPECT_EQ(events[1].cbid, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  EXPECT_EQ(events[1].module_id, events[0].module_id);
  CUcontext current = nullptr;
  d.fn<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&current);
  EXPECT_EQ(events[0].context, current);
}

TEST(simModule, LaunchLoadsLazily) {
  ::unsetenv("CUDA_MODULE_LOADING");
  SimGpu gpu(kContextGpu);
  Driver d;
  d.use(0);
  const std::string image = ptx(100);
  CUmodule module = nullptr;
  ASSERT_EQ(d.fn<ModuleLoadData>("cuModuleLoadData")(&module, image.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 300 * MiB);
  CUfunction kernel = nullptr;
  ASSERT_EQ(d.fn<ModuleGetFunction>("cuModuleGetFunction")(&kernel, module, "k"), CUDA_SUCCESS);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  ASSERT_EQ(d.fn<Launch>("cuLaunchKernel")(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 302 * MiB);
}

TEST(simModule, EagerLoadingTakesMemoryAtLoad) {
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  SimGpu gpu(kContextGpu);
  Driver d;
  d.use(0);
  // A 64-bit ELF (cubin) ends with its section header table: 3 headers of 64 bytes at 5 MiB − 192.
  std::vector<unsigned char> cubin(5 * MiB, 0);
  std::memcpy(cubin.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  const std::uint64_t shoff = 5 * MiB - 192;
  const std::uint16_t shentsize = 64, shnum = 3;
  std::memcpy(&cubin[0x28], &shoff, 8);
  std::memcpy(&cubin[0x3A], &shentsize, 2);
  std::memcpy(&cubin[0x3C], &shnum, 2);
  CUmodule module = nullptr;
  using LoadEx = CUresult (*)(CUmodule*, const void*, unsigned, void*, void**);
  ASSERT_EQ(d.fn<LoadEx>("cuModuleLoadDataEx")(&module, cubin.data(), 0, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(d.process_used(0), 306 * MiB);

  // From a file: its size.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gpumem-module-" + std::to_string(::getpid())))
          .string();
  {
    std::ofstream file(path, std::ios::binary);
    file << ptx(3 * MiB + 2);  // 3 MiB + 1 bytes: 4 MiB
  }
  CUmodule from_file = nullptr;
  ASSERT_EQ(d.fn<ModuleLoad>("cuModuleLoad")(&from_file, path.c_str()), CUDA_SUCCESS);
  std::filesystem::remove(path);
  EXPECT_EQ(d.process_used(0), 310 * MiB);
  EXPECT_EQ(d.fn<ModuleLoad>("cuModuleLoad")(&from_file, "/nonexistent/module.cubin"),
            CUDA_ERROR_FILE_NOT_FOUND);
  // Releasing the primary context unloads its modules with it.
  ResourceRecorder recorder;
  ASSERT_EQ(d.fn<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxRelease_v2")(0), CUDA_SUCCESS);
  EXPECT_EQ(d.nvml_used(0), 0u);
  const auto events = recorder.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].cbid, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  EXPECT_EQ(events[1].cbid, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  EXPECT_EQ(events[1].cubin_size, 5 * MiB);
  EXPECT_EQ(events[2].cbid, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
}

}  // namespace
}  // namespace gpumem::testing
