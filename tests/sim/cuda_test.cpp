// The simulated CUDA driver: enumeration under CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER, device
// identity, contexts, every allocation kind, OOM, lost devices, faults, several processes sharing
// the GPUs, and CUDA_INJECTION64_PATH.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "driver/abi/cuda.hpp"
#include "driver/abi/nvml.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

struct Cuda {
  SimLibrary lib{"libcuda.so.1"};
  PFN_cuInit init = lib.get<PFN_cuInit>("cuInit");
  PFN_cuDeviceGetCount count = lib.get<PFN_cuDeviceGetCount>("cuDeviceGetCount");
  PFN_cuDeviceGet get = lib.get<PFN_cuDeviceGet>("cuDeviceGet");
  PFN_cuDeviceGetUuid uuid = lib.get<PFN_cuDeviceGetUuid>("cuDeviceGetUuid_v2");
  PFN_cuDeviceGetPCIBusId bus_id = lib.get<PFN_cuDeviceGetPCIBusId>("cuDeviceGetPCIBusId");
  PFN_cuDevicePrimaryCtxRetain retain =
      lib.get<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain");
  PFN_cuDevicePrimaryCtxRelease release =
      lib.get<PFN_cuDevicePrimaryCtxRelease>("cuDevicePrimaryCtxRelease_v2");
  PFN_cuDevicePrimaryCtxGetState state =
      lib.get<PFN_cuDevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
  PFN_cuCtxSetCurrent set_current = lib.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent");
  PFN_cuCtxGetCurrent get_current = lib.get<PFN_cuCtxGetCurrent>("cuCtxGetCurrent");
  PFN_cuCtxGetDevice ctx_device = lib.get<PFN_cuCtxGetDevice>("cuCtxGetDevice");
  PFN_cuMemGetInfo mem_info = lib.get<PFN_cuMemGetInfo>("cuMemGetInfo_v2");
  PFN_cuMemAlloc alloc = lib.get<PFN_cuMemAlloc>("cuMemAlloc_v2");
  PFN_cuMemFree free = lib.get<PFN_cuMemFree>("cuMemFree_v2");

  void use(int ordinal) {
    ASSERT_EQ(init(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(retain(&context, ordinal), CUDA_SUCCESS);
    ASSERT_EQ(set_current(context), CUDA_SUCCESS);
  }
  std::string uuid_hex(int ordinal) {
    CUuuid u{};
    EXPECT_EQ(uuid(&u, ordinal), CUDA_SUCCESS);
    std::string text;
    char byte[3];
    for (char c : u.bytes) {
      std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c));
      text += byte;
    }
    return text;
  }
  // The uuid prefix of each visible ordinal: "aaaaaaaa" (NVML 0, bus 3B) or "bbbbbbbb" (NVML 1, bus
  // 19).
  std::vector<std::string> visible() {
    std::vector<std::string> result;
    int n = -1;
    if (init(0) != CUDA_SUCCESS) return result;
    EXPECT_EQ(count(&n), CUDA_SUCCESS);
    for (int i = 0; i < n; ++i) result.push_back(uuid_hex(i).substr(0, 8));
    return result;
  }
};

// NVML's used bytes on a device, read through the simulated NVML of the same state.
std::uint64_t nvml_used(unsigned nvml_index) {
  static SimLibrary nvml("libnvidia-ml.so.1");
  static const bool ready = nvml.get<PFN_nvmlInit_v2>("nvmlInit_v2")() == NVML_SUCCESS;
  EXPECT_TRUE(ready);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2")(nvml_index,
                                                                                      &device),
            NVML_SUCCESS);
  nvmlMemory_v2_t m{};
  m.version = kNvmlMemory_v2;
  EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetMemoryInfo_v2>("nvmlDeviceGetMemoryInfo_v2")(device, &m),
            NVML_SUCCESS);
  return m.used;
}

std::vector<unsigned> nvml_pids(unsigned nvml_index) {
  static SimLibrary nvml("libnvidia-ml.so.1");
  static const bool ready = nvml.get<PFN_nvmlInit_v2>("nvmlInit_v2")() == NVML_SUCCESS;
  EXPECT_TRUE(ready);
  nvmlDevice_t device = nullptr;
  nvml.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2")(nvml_index, &device);
  nvmlProcessInfo_v2_t records[8]{};
  unsigned count = 8;
  EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetRunningProcesses>("nvmlDeviceGetComputeRunningProcesses_v3")(
                device, &count, records),
            NVML_SUCCESS);
  std::vector<unsigned> pids;
  for (unsigned i = 0; i < count; ++i) pids.push_back(records[i].pid);
  return pids;
}

using Strings = std::vector<std::string>;

TEST(simCuda, NotInitializedBeforeCuInit) {
  SimGpu gpu;
  Cuda cuda;
  CUcontext context = nullptr;
  int n = 0;
  EXPECT_EQ(cuda.get_current(&context), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuda.count(&n), CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(cuda.init(0), CUDA_SUCCESS);
  EXPECT_EQ(cuda.get_current(&context), CUDA_SUCCESS);
  EXPECT_EQ(context, nullptr);
  int version = 0;
  EXPECT_EQ(cuda.lib.get<PFN_cuDriverGetVersion>("cuDriverGetVersion")(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
}

TEST(simCuda, DefaultOrderIsConfiguredFastestFirst) {
  SimGpu gpu;
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("CUDA_DEVICE_ORDER");
  EXPECT_EQ(Cuda().visible(), (Strings{"bbbbbbbb", "aaaaaaaa"}));
}

TEST(simCuda, PciBusIdOrder) {
  SimGpu gpu;
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  EXPECT_EQ(Cuda().visible(), (Strings{"bbbbbbbb", "aaaaaaaa"}));  // bus 19 before 3B
}

TEST(simCuda, VisibleIntegersFollowTheOrder) {
  SimGpu gpu;
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  ::unsetenv("CUDA_DEVICE_ORDER");
  EXPECT_EQ(Cuda().visible(), (Strings{"aaaaaaaa"}));
}

TEST(simCuda, VisibleUuidPrefixes) {
  SimGpu gpu;
  ::setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbbbbbb-2222", 1);
  EXPECT_EQ(Cuda().visible(), (Strings{"aaaaaaaa", "bbbbbbbb"}));
}

TEST(simCuda, VisibleInvalidEntryEndsTheList) {
  SimGpu gpu;
  ::setenv("CUDA_VISIBLE_DEVICES", "0,5,1", 1);
  EXPECT_EQ(Cuda().visible(), (Strings{"bbbbbbbb"}));
}

TEST(simCuda, VisibleDuplicatesGiveNoDevice) {
  SimGpu gpu;
  ::setenv("CUDA_VISIBLE_DEVICES", "0,0", 1);
  Cuda cuda;
  EXPECT_EQ(cuda.init(0), CUDA_ERROR_NO_DEVICE);
}

TEST(simCuda, VisibleEmptyGivesNoDevice) {
  SimGpu gpu;
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  Cuda cuda;
  EXPECT_EQ(cuda.init(0), CUDA_ERROR_NO_DEVICE);
  int n = 0;
  EXPECT_EQ(cuda.count(&n), CUDA_ERROR_NOT_INITIALIZED);
}

TEST(simCuda, UuidBytesAndBusId) {
  SimGpu gpu;
  Cuda cuda;
  ASSERT_EQ(cuda.init(0), CUDA_SUCCESS);
  EXPECT_EQ(cuda.uuid_hex(0), "bbbbbbbb222240008000000000000001");
  char bus[32];
  ASSERT_EQ(cuda.bus_id(bus, sizeof bus, 0), CUDA_SUCCESS);
  EXPECT_STREQ(bus, "0000:19:00.0");
  ASSERT_EQ(cuda.bus_id(bus, sizeof bus, 1), CUDA_SUCCESS);
  EXPECT_STREQ(bus, "0000:3b:00.0");
  char name[64];
  ASSERT_EQ(cuda.lib.get<PFN_cuDeviceGetName>("cuDeviceGetName")(name, sizeof name, 1),
            CUDA_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-40GB");
  CUdevice d = 0;
  EXPECT_EQ(cuda.get(&d, 2), CUDA_ERROR_INVALID_DEVICE);
}

TEST(simCuda, PrimaryContextChargesContextMemory) {
  SimGpu gpu(
      R"({"devices": [{"name": "A", "total_mib": 1000, "reserved_mib": 100, "context_mib": 50}]})");
  Cuda cuda;
  ASSERT_EQ(cuda.init(0), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 1;
  ASSERT_EQ(cuda.state(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(nvml_used(0), 0u);
  CUcontext context = nullptr;
  ASSERT_EQ(cuda.retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuda.state(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(nvml_used(0), 50 * MiB);
  EXPECT_EQ(nvml_pids(0), std::vector<unsigned>{static_cast<unsigned>(::getpid())});
  ASSERT_EQ(cuda.set_current(context), CUDA_SUCCESS);
  CUdevice device = -1;
  ASSERT_EQ(cuda.ctx_device(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cuda.mem_info(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, 1000 * MiB);
  EXPECT_EQ(free, 850 * MiB);
  ASSERT_EQ(cuda.release(0), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(0), 0u);
  EXPECT_TRUE(nvml_pids(0).empty());
  EXPECT_EQ(cuda.release(0), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(simCuda, CurrentContextIsPerThread) {
  SimGpu gpu;
  Cuda cuda;
  cuda.use(1);
  CUcontext other = reinterpret_cast<CUcontext>(1);
  std::thread([&] { cuda.get_current(&other); }).join();
  EXPECT_EQ(other, nullptr);
  std::size_t free = 0, total = 0;
  CUresult in_thread = CUDA_SUCCESS;
  std::thread([&] { in_thread = cuda.mem_info(&free, &total); }).join();
  EXPECT_EQ(in_thread, CUDA_ERROR_INVALID_CONTEXT);
}

TEST(simCuda, AllocateFreeAndAddressRange) {
  SimGpu gpu;
  Cuda cuda;
  cuda.use(0);  // NVML 1
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuda.alloc(&a, 1000), CUDA_SUCCESS);
  ASSERT_EQ(cuda.alloc(&b, 3 * MiB), CUDA_SUCCESS);
  EXPECT_NE(a, 0u);
  EXPECT_EQ(nvml_used(1), 1000 + 3 * MiB);
  auto range = cuda.lib.get<PFN_cuMemGetAddressRange>("cuMemGetAddressRange_v2");
  CUdeviceptr base = 0;
  std::size_t size = 0;
  ASSERT_EQ(range(&base, &size, b + 12345), CUDA_SUCCESS);
  EXPECT_EQ(base, b);
  EXPECT_EQ(size, 3 * MiB);
  EXPECT_EQ(range(&base, &size, a + 1000), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuda.free(a), CUDA_SUCCESS);
  EXPECT_EQ(cuda.free(a), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(nvml_used(1), 3 * MiB);
  ASSERT_EQ(cuda.free(b), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(1), 0u);
}

TEST(simCuda, AllocationKinds) {
  SimGpu gpu;
  Cuda cuda;
  cuda.use(1);  // NVML 0
  CUdeviceptr p = 0;
  std::size_t pitch = 0;
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocPitch>("cuMemAllocPitch_v2")(&p, &pitch, 1000, 10, 4),
            CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(nvml_used(0), 10240u);
  ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);

  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocManaged>("cuMemAllocManaged")(&p, 8 * MiB, 1), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(0), 0u);
  ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);

  // Stream-ordered: the pool's reservation shows (2 MiB pages), kept after the free until a
  // synchronisation trims it to the release threshold (0).
  for (const char* symbol : {"cuMemAllocAsync", "cuMemAllocAsync_ptsz"}) {
    ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocAsync>(symbol)(&p, 2 * MiB, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(nvml_used(0), 2 * MiB) << symbol;
    ASSERT_EQ(cuda.lib.get<PFN_cuMemFreeAsync>("cuMemFreeAsync_ptsz")(p, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(nvml_used(0), 2 * MiB) << symbol;
  }
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuda.lib.get<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocFromPoolAsync>("cuMemAllocFromPoolAsync")(&p, 3 * MiB, pool,
                                                                                 nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(0), 4 * MiB);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemFreeAsync>("cuMemFreeAsync")(p, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(0), 4 * MiB);
  ASSERT_EQ(cuda.lib.get<CUresult (*)()>("cuCtxSynchronize")(), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(0), 0u);

  // cuMemCreate charges prop.location.id (CUDA 0 = NVML 1), not the current context's device.
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 0;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuda.lib.get<PFN_cuMemCreate>("cuMemCreate")(&handle, 6 * MiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(1), 6 * MiB);
  EXPECT_EQ(nvml_used(0), 0u);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);
  EXPECT_EQ(nvml_used(1), 0u);
}

TEST(simCuda, OutOfMemory) {
  SimGpu gpu(R"({"devices": [{"name": "A", "total_mib": 100, "reserved_mib": 10}]})");
  Cuda cuda;
  cuda.use(0);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuda.alloc(&p, 91 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuda.alloc(&p, 90 * MiB), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(cuda.alloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(nvml_used(0), 90 * MiB);
  const char* text = nullptr;
  ASSERT_EQ(cuda.lib.get<PFN_cuGetErrorString>("cuGetErrorString")(CUDA_ERROR_OUT_OF_MEMORY, &text),
            CUDA_SUCCESS);
  EXPECT_STREQ(text, "out of memory");
}

TEST(simCuda, NoContextNoAllocation) {
  SimGpu gpu;
  Cuda cuda;
  ASSERT_EQ(cuda.init(0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuda.alloc(&p, 10), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(simCuda, LostDevice) {
  SimGpu gpu;
  Cuda cuda;
  cuda.use(0);  // NVML 1
  gpu.set_lost(1, true);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuda.alloc(&p, 10), CUDA_ERROR_DEVICE_UNAVAILABLE);
  std::size_t free = 0, total = 0;
  EXPECT_EQ(cuda.mem_info(&free, &total), CUDA_ERROR_DEVICE_UNAVAILABLE);
  CUcontext context = nullptr;
  EXPECT_EQ(cuda.retain(&context, 1), CUDA_SUCCESS);  // NVML 0 is fine
  gpu.set_lost(1, false);
  EXPECT_EQ(cuda.alloc(&p, 10), CUDA_SUCCESS);
}

TEST(simCuda, InitFault) {
  SimGpu gpu(kTwoGpus, "cuda_init=34");
  Cuda cuda;
  EXPECT_EQ(cuda.init(0), CUDA_ERROR_STUB_LIBRARY);
  CUcontext context = nullptr;
  EXPECT_EQ(cuda.get_current(&context), CUDA_ERROR_NOT_INITIALIZED);
}

// A child process allocates; the parent sees its memory and pid, then neither once it exits.
TEST(simCuda, OtherProcessesShowAndGoAway) {
  SimGpu gpu;
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Cuda cuda;
    CUcontext context = nullptr;
    CUdeviceptr p = 0;
    const bool ok = cuda.init(0) == CUDA_SUCCESS && cuda.retain(&context, 0) == CUDA_SUCCESS &&
                    cuda.set_current(context) == CUDA_SUCCESS &&
                    cuda.alloc(&p, 700 * MiB) == CUDA_SUCCESS;
    char c = ok ? 'y' : 'n';
    static_cast<void>(::write(ready[1], &c, 1));
    static_cast<void>(::read(release[0], &c, 1));
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(nvml_used(1), 700 * MiB);
  EXPECT_EQ(nvml_pids(1), std::vector<unsigned>{static_cast<unsigned>(child)});
  ASSERT_EQ(::write(release[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(nvml_pids(1).empty());
  EXPECT_EQ(nvml_used(1), 0u);
}

// A forked child that allocates `bytes` on GPU 0 and waits to be killed (and dies with this
// process, so a failed assertion leaves nothing behind). @return its pid once the block is held,
// or -1 when the fork or the allocation failed.
pid_t fork_holder(std::uint64_t bytes) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    Cuda cuda;
    CUcontext context = nullptr;
    CUdeviceptr p = 0;
    cuda.init(0);
    cuda.retain(&context, 1);
    cuda.set_current(context);
    char c = cuda.alloc(&p, bytes) == CUDA_SUCCESS ? 'y' : 'n';
    static_cast<void>(::write(ready[1], &c, 1));
    for (;;) ::pause();
  }
  char c = 0;
  const bool held = ::read(ready[0], &c, 1) == 1 && c == 'y';
  ::close(ready[0]);
  ::close(ready[1]);
  if (held) return child;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return -1;
}

TEST(simCuda, KilledProcessIsReclaimed) {
  SimGpu gpu;
  const pid_t child = fork_holder(123 * MiB);
  ASSERT_GT(child, 0);
  EXPECT_EQ(nvml_used(0), 123 * MiB);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  // Not reaped yet: a zombie holds no GPU memory.
  for (int i = 0; i < 2000 && !nvml_pids(0).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(nvml_pids(0).empty());
  EXPECT_EQ(nvml_used(0), 0u);
  ::waitpid(child, nullptr, 0);
}

// The memory figure alone (no process list asked for, which reclaims thoroughly) gives a killed
// process's memory back, before its parent reaps it: as the real driver's, which frees it when
// the process ends. The figure learns of the exit from the kernel, so it neither asks about
// every process at each read nor mistakes the zombie for a live holder (kill(pid, 0) would).
TEST(simCuda, TheMemoryFigureGivesBackAKilledProcesssMemoryBeforeItIsReaped) {
  SimGpu gpu;
  const pid_t child = fork_holder(77 * MiB);
  ASSERT_GT(child, 0);
  EXPECT_EQ(nvml_used(0), 77 * MiB);
  // Until the figure has seen the child as a holder (it looks at most every 5 ms).
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(nvml_used(0), 77 * MiB);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  for (int i = 0; i < 2000 && nvml_used(0) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(nvml_used(0), 0u);
  siginfo_t info{};
  EXPECT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(info.si_pid, child);  // still a zombie: nothing reaped it to free its memory
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace gpumem::testing
