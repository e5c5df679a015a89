// The simulated NVML: identity, v1/v2 memory numbers, process lists in every record layout, lost
// devices and faults — checked against the numbers the config and the allocations imply.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "driver/abi/nvml.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

struct Nvml {
  SimLibrary lib{"libnvidia-ml.so.1"};
  PFN_nvmlInit_v2 init = lib.get<PFN_nvmlInit_v2>("nvmlInit_v2");
  PFN_nvmlDeviceGetHandleByIndex handle =
      lib.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
  PFN_nvmlDeviceGetMemoryInfo memory_v1 =
      lib.get<PFN_nvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  PFN_nvmlDeviceGetMemoryInfo_v2 memory_v2 =
      lib.get<PFN_nvmlDeviceGetMemoryInfo_v2>("nvmlDeviceGetMemoryInfo_v2");
  PFN_nvmlDeviceGetRunningProcesses compute_v3 =
      lib.get<PFN_nvmlDeviceGetRunningProcesses>("nvmlDeviceGetComputeRunningProcesses_v3");
  PFN_nvmlDeviceGetRunningProcessDetailList detail =
      lib.get<PFN_nvmlDeviceGetRunningProcessDetailList>("nvmlDeviceGetRunningProcessDetailList");

  nvmlDevice_t device(unsigned index) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(handle(index, &d), NVML_SUCCESS);
    return d;
  }
  nvmlMemory_v2_t v2(unsigned index) {
    nvmlMemory_v2_t m{};
    m.version = kNvmlMemory_v2;
    EXPECT_EQ(memory_v2(device(index), &m), NVML_SUCCESS);
    return m;
  }
};

// This process allocates on CUDA ordinal `ordinal` through the simulated driver.
struct CudaUser {
  SimLibrary lib{"libcuda.so.1"};
  void use(int ordinal) {
    ASSERT_EQ(lib.get<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(lib.get<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&context, ordinal),
              CUDA_SUCCESS);
    ASSERT_EQ(lib.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  }
  CUdeviceptr alloc(std::size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(lib.get<PFN_cuMemAlloc>("cuMemAlloc_v2")(&p, bytes), CUDA_SUCCESS);
    return p;
  }
};

TEST(simNvml, CallsBeforeInitAreUninitialized) {
  SimGpu gpu;
  Nvml nvml;
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvml.handle(0, &d), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.lib.get<PFN_nvmlShutdown>("nvmlShutdown")(), NVML_ERROR_UNINITIALIZED);
}

TEST(simNvml, IdentityFromConfig) {
  SimGpu gpu;
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(nvml.lib.get<PFN_nvmlDeviceGetCount>("nvmlDeviceGetCount_v2")(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  char text[96];
  ASSERT_EQ(
      nvml.lib.get<PFN_nvmlDeviceGetName>("nvmlDeviceGetName")(nvml.device(1), text, sizeof text),
      NVML_SUCCESS);
  EXPECT_STREQ(text, "NVIDIA H200");
  ASSERT_EQ(
      nvml.lib.get<PFN_nvmlDeviceGetUUID>("nvmlDeviceGetUUID")(nvml.device(0), text, sizeof text),
      NVML_SUCCESS);
  EXPECT_STREQ(text, "GPU-aaaaaaaa-1111-4000-8000-000000000000");
  EXPECT_EQ(nvml.lib.get<PFN_nvmlDeviceGetUUID>("nvmlDeviceGetUUID")(nvml.device(0), text, 10),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(nvml.lib.get<PFN_nvmlSystemGetDriverVersion>("nvmlSystemGetDriverVersion")(text, 80),
            NVML_SUCCESS);
  EXPECT_STREQ(text, "580.95.05");
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvml.lib.get<PFN_nvmlDeviceGetPciInfo>("nvmlDeviceGetPciInfo_v3")(nvml.device(0), &pci),
            NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:3B:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:3B:00.0");
  EXPECT_EQ(pci.bus, 0x3Bu);
  EXPECT_STREQ(nvml.lib.get<PFN_nvmlErrorString>("nvmlErrorString")(NVML_ERROR_GPU_IS_LOST),
               "GPU is lost");
}

TEST(simNvml, MigInstancesAreFoundUnderTheirGpuAndByUuid) {
  SimGpu gpu(R"({"devices": [
    {"name": "A100", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
     "pci_bus_id": "00000000:10:00.0", "total_mib": 81920},
    {"name": "A100 MIG 3g.40gb", "uuid": "MIG-cccccccc-3333-4000-8000-000000000002",
     "pci_bus_id": "00000000:10:00.0", "total_mib": 40192, "parent": 0},
    {"name": "H100", "uuid": "GPU-dddddddd-4444-4000-8000-000000000003",
     "pci_bus_id": "00000000:30:00.0", "total_mib": 81559}]})");
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  auto count_of = nvml.lib.get<PFN_nvmlDeviceGetCount>("nvmlDeviceGetCount_v2");
  auto most_of = nvml.lib.get<PFN_nvmlDeviceGetMaxMigDeviceCount>("nvmlDeviceGetMaxMigDeviceCount");
  auto mig_at =
      nvml.lib.get<PFN_nvmlDeviceGetMigDeviceHandleByIndex>("nvmlDeviceGetMigDeviceHandleByIndex");
  auto by_uuid = nvml.lib.get<PFN_nvmlDeviceGetHandleByUUID>("nvmlDeviceGetHandleByUUID");
  auto by_pci = nvml.lib.get<PFN_nvmlDeviceGetHandleByPciBusId>("nvmlDeviceGetHandleByPciBusId_v2");
  auto index_of = nvml.lib.get<PFN_nvmlDeviceGetIndex>("nvmlDeviceGetIndex");
  unsigned count = 0;
  ASSERT_EQ(count_of(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);  // the GPUs; the instance is not enumerated by index
  EXPECT_EQ(nvml.v2(1).total, 81559 * MiB);
  unsigned most = 9;
  ASSERT_EQ(most_of(nvml.device(1), &most), NVML_SUCCESS);
  EXPECT_EQ(most, 0u);
  ASSERT_EQ(most_of(nvml.device(0), &most), NVML_SUCCESS);
  EXPECT_EQ(most, 1u);
  nvmlDevice_t mig = nullptr, found = nullptr;
  ASSERT_EQ(mig_at(nvml.device(0), 0, &mig), NVML_SUCCESS);
  EXPECT_EQ(mig_at(nvml.device(0), 1, &found), NVML_ERROR_NOT_FOUND);
  ASSERT_EQ(by_uuid("MIG-cccccccc-3333-4000-8000-000000000002", &found), NVML_SUCCESS);
  EXPECT_EQ(found, mig);
  unsigned index = 9;
  ASSERT_EQ(index_of(mig, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 0u);  // within its GPU
  nvmlMemory_v2_t memory{};
  memory.version = kNvmlMemory_v2;
  ASSERT_EQ(nvml.memory_v2(mig, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 40192 * MiB);
  ASSERT_EQ(by_pci("00000000:10:00.0", &found), NVML_SUCCESS);
  EXPECT_EQ(found, nvml.device(0));  // the bus names the GPU, not its instance
}

TEST(simNvml, HandleByUuidAndPciBusId) {
  SimGpu gpu;
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  auto by_uuid = nvml.lib.get<PFN_nvmlDeviceGetHandleByUUID>("nvmlDeviceGetHandleByUUID");
  auto by_pci = nvml.lib.get<PFN_nvmlDeviceGetHandleByPciBusId>("nvmlDeviceGetHandleByPciBusId_v2");
  auto index_of = nvml.lib.get<PFN_nvmlDeviceGetIndex>("nvmlDeviceGetIndex");
  nvmlDevice_t d = nullptr;
  unsigned index = 99;
  ASSERT_EQ(by_uuid("GPU-bbbbbbbb-2222-4000-8000-000000000001", &d), NVML_SUCCESS);
  ASSERT_EQ(index_of(d, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(by_uuid("GPU-bbbbbbbb", &d), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(by_uuid("MIG-bbbbbbbb-2222-4000-8000-000000000001", &d), NVML_ERROR_NOT_FOUND);
  for (const char* form : {"00000000:3B:00.0", "0000:3b:00.0", "0000:3B:00.0", "3b:00.0"}) {
    ASSERT_EQ(by_pci(form, &d), NVML_SUCCESS) << form;
    ASSERT_EQ(index_of(d, &index), NVML_SUCCESS);
    EXPECT_EQ(index, 0u) << form;
  }
  EXPECT_EQ(by_pci("0000:77:00.0", &d), NVML_ERROR_NOT_FOUND);
}

TEST(simNvml, IdleDeviceNumbers) {
  SimGpu gpu;
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  const nvmlMemory_v2_t v2 = nvml.v2(1);
  EXPECT_EQ(v2.total, 143771 * MiB);
  EXPECT_EQ(v2.reserved, 542 * MiB);
  EXPECT_EQ(v2.used, 0u);
  EXPECT_EQ(v2.free, (143771 - 542) * MiB);
  nvmlMemory_t v1{};
  ASSERT_EQ(nvml.memory_v1(nvml.device(1), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, 143771 * MiB);
  EXPECT_EQ(v1.used, 542 * MiB);  // v1 counts the reservation as used
  EXPECT_EQ(v1.free, (143771 - 542) * MiB);
}

TEST(simNvml, V2RequiresTheVersionedStruct) {
  SimGpu gpu;
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlMemory_v2_t m{};
  m.version = 2;
  EXPECT_EQ(nvml.memory_v2(nvml.device(0), &m), NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST(simNvml, AllocationsShowInV1AndV2) {
  SimGpu gpu;
  Nvml nvml;
  CudaUser cuda;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  cuda.use(0);  // CUDA 0 is NVML 1 in kTwoGpus
  cuda.alloc(300 * MiB + 7);
  const nvmlMemory_v2_t v2 = nvml.v2(1);
  EXPECT_EQ(v2.used, 300 * MiB + 7);
  EXPECT_EQ(v2.total, v2.reserved + v2.used + v2.free);
  nvmlMemory_t v1{};
  ASSERT_EQ(nvml.memory_v1(nvml.device(1), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.used, 542 * MiB + 300 * MiB + 7);
  EXPECT_EQ(nvml.v2(0).used, 0u);
}

void expect_own_process(const unsigned char* records, unsigned stride, std::uint64_t bytes) {
  unsigned pid = 0;
  unsigned long long used = 0;
  std::memcpy(&pid, records, sizeof pid);
  std::memcpy(&used, records + 8, sizeof used);
  EXPECT_EQ(pid, static_cast<unsigned>(::getpid()));
  EXPECT_EQ(used, bytes);
  if (stride >= 24) {
    unsigned instance = 0;
    std::memcpy(&instance, records + 16, sizeof instance);
    EXPECT_EQ(instance, 0xFFFFFFFFu);
  }
}

void check_process_list(unsigned stride, const char* config) {
  SimGpu gpu(config);
  Nvml nvml;
  CudaUser cuda;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(nvml.compute_v3(nvml.device(1), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  cuda.use(0);
  cuda.alloc(64 * MiB);
  count = 0;
  ASSERT_EQ(nvml.compute_v3(nvml.device(1), &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 1u);
  std::vector<unsigned char> buffer(stride * 4, 0xAA);
  count = 4;
  ASSERT_EQ(nvml.compute_v3(nvml.device(1), &count, buffer.data()), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  expect_own_process(buffer.data(), stride, 64 * MiB);
  // Exactly one record written: the probe bytes past it are untouched.
  EXPECT_EQ(buffer[stride], 0xAA);
  EXPECT_EQ(buffer[stride - 1],
            stride == 32 ? 0x00 : 0xFF);  // CC-protected bytes, or the instance id
}

TEST(simNvml, ProcessListWith24ByteRecords) {
  check_process_list(24, kTwoGpus);
}

TEST(simNvml, ProcessListWith32ByteRecords) {
  std::string config = kTwoGpus;
  config.replace(config.find('{'), 1, R"({"process_record_bytes": 32,)");
  check_process_list(32, config.c_str());
}

TEST(simNvml, OlderProcessQueriesUseTheirOwnLayouts) {
  SimGpu gpu;
  Nvml nvml;
  CudaUser cuda;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  cuda.use(1);  // NVML 0
  cuda.alloc(5 * MiB);
  for (const auto& [symbol, stride] : {std::pair{"nvmlDeviceGetComputeRunningProcesses", 16u},
                                       std::pair{"nvmlDeviceGetComputeRunningProcesses_v2", 24u}}) {
    std::vector<unsigned char> buffer(64, 0xAA);
    unsigned count = 2;
    ASSERT_EQ(nvml.lib.get<PFN_nvmlDeviceGetRunningProcesses>(symbol)(nvml.device(0), &count,
                                                                      buffer.data()),
              NVML_SUCCESS);
    ASSERT_EQ(count, 1u);
    expect_own_process(buffer.data(), stride, 5 * MiB);
    EXPECT_EQ(buffer[stride], 0xAA) << symbol;
  }
  unsigned count = 0;
  EXPECT_EQ(nvml.lib.get<PFN_nvmlDeviceGetRunningProcesses>(
                "nvmlDeviceGetGraphicsRunningProcesses_v3")(nvml.device(0), &count, nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST(simNvml, ProcessDetailList) {
  SimGpu gpu;
  Nvml nvml;
  CudaUser cuda;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  cuda.use(0);
  cuda.alloc(3 * MiB);
  nvmlProcessDetailList_v1_t list{};
  list.version = kNvmlProcessDetailList_v1;
  list.mode = 0;
  ASSERT_EQ(nvml.detail(nvml.device(1), &list), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(list.numProcArrayEntries, 1u);
  nvmlProcessDetail_v1_t records[3]{};
  list.procArray = records;
  list.numProcArrayEntries = 3;
  ASSERT_EQ(nvml.detail(nvml.device(1), &list), NVML_SUCCESS);
  ASSERT_EQ(list.numProcArrayEntries, 1u);
  EXPECT_EQ(records[0].pid, static_cast<unsigned>(::getpid()));
  EXPECT_EQ(records[0].usedGpuMemory, 3 * MiB);
  list.mode = 1;
  list.numProcArrayEntries = 3;
  ASSERT_EQ(nvml.detail(nvml.device(1), &list), NVML_SUCCESS);
  EXPECT_EQ(list.numProcArrayEntries, 0u);
  list.version = 1;
  EXPECT_EQ(nvml.detail(nvml.device(1), &list), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST(simNvml, LostDevice) {
  SimGpu gpu;
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  gpu.set_lost(1, true);
  nvmlMemory_v2_t m{};
  m.version = kNvmlMemory_v2;
  EXPECT_EQ(nvml.memory_v2(nvml.device(1), &m), NVML_ERROR_GPU_IS_LOST);
  nvmlMemory_t v1{};
  EXPECT_EQ(nvml.memory_v1(nvml.device(1), &v1), NVML_ERROR_GPU_IS_LOST);
  unsigned count = 0;
  EXPECT_EQ(nvml.compute_v3(nvml.device(1), &count, nullptr), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.memory_v2(nvml.device(0), &m), NVML_SUCCESS);
  gpu.set_lost(1, false);
  EXPECT_EQ(nvml.memory_v2(nvml.device(1), &m), NVML_SUCCESS);
}

TEST(simNvml, LostFromTheStartByFault) {
  SimGpu gpu(kTwoGpus, "lost=0");
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlMemory_t v1{};
  EXPECT_EQ(nvml.memory_v1(nvml.device(0), &v1), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.memory_v1(nvml.device(1), &v1), NVML_SUCCESS);
}

TEST(simNvml, InitFault) {
  SimGpu gpu(kTwoGpus, "nvml_init=18");
  Nvml nvml;
  EXPECT_EQ(nvml.init(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
  EXPECT_EQ(nvml.lib.get<PFN_nvmlInitWithFlags>("nvmlInitWithFlags")(0),
            NVML_ERROR_LIB_RM_VERSION_MISMATCH);
}

TEST(simNvml, V1OnlyFault) {
  SimGpu gpu(kTwoGpus, "nvml_memory=v1");
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlMemory_v2_t m{};
  m.version = kNvmlMemory_v2;
  EXPECT_EQ(nvml.memory_v2(nvml.device(0), &m), NVML_ERROR_FUNCTION_NOT_FOUND);
  nvmlMemory_t v1{};
  EXPECT_EQ(nvml.memory_v1(nvml.device(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.used, 256 * MiB);
}

TEST(simNvml, V2OnlyFault) {
  SimGpu gpu(kTwoGpus, "nvml_memory=v2");
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlMemory_t v1{};
  EXPECT_EQ(nvml.memory_v1(nvml.device(0), &v1), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.v2(0).total, 40960 * MiB);
}

TEST(simNvml, OldDriverExportsOnlyUnversionedSymbols) {
  SimGpu gpu;
  SimLibrary old("old/libnvidia-ml.so.1");
  EXPECT_FALSE(old.has("nvmlInit_v2"));
  EXPECT_FALSE(old.has("nvmlDeviceGetMemoryInfo_v2"));
  EXPECT_FALSE(old.has("nvmlDeviceGetComputeRunningProcesses_v3"));
  EXPECT_FALSE(old.has("nvmlDeviceGetRunningProcessDetailList"));
  ASSERT_EQ(old.get<PFN_nvmlInit_v2>("nvmlInit")(), NVML_SUCCESS);
  nvmlDevice_t d = nullptr;
  ASSERT_EQ(old.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex")(0, &d),
            NVML_SUCCESS);
  nvmlMemory_t v1{};
  ASSERT_EQ(old.get<PFN_nvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo")(d, &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, 40960 * MiB);
  EXPECT_EQ(v1.used, 256 * MiB);
}

TEST(simNvml, ConfigFromFile) {
  const std::string path =
      ::testing::TempDir() + "/sim-config-" + std::to_string(::getpid()) + ".json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"devices": [{"name": "Solo", "total_mib": 1024, "reserved_mib": 24}]})", f);
    std::fclose(f);
  }
  SimGpu gpu(path);
  Nvml nvml;
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(nvml.lib.get<PFN_nvmlDeviceGetCount>("nvmlDeviceGetCount_v2")(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(nvml.v2(0).free, 1000 * MiB);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpumem::testing
