// Checks gpumem against a real NVIDIA driver: identity, queries, and the process footprint of
// each allocation pattern (docs/peaks.md). Prints one "PASS name: detail" / "FAIL name: detail"
// line per check, "INFO name: detail" for what real drivers do where NVIDIA's documentation does
// not say (observed, never failed), and exits non-zero on any FAIL. Run by tests/device/run.sh;
// against the simulator with GPUMEM_*_LIBRARY pointing at build/sim (the script's header says how).
//
// Every pattern reads an exact PeakCounter and compares it with NVML's per-process figure for
// this process (gpumem::device_processes): the reading's current level must equal it, and its peak
// must reach at least the pattern's known high point. The driver is loaded at run time, as gpumem
// loads it (real_driver.hpp).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gpumem/gpumem.hpp>

#include "real_driver.hpp"

extern char** environ;

namespace {

using namespace real_gpu;

int failures = 0;

void check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}
void info(const std::string& name, const std::string& detail) {
  std::printf("INFO %s: %s\n", name.c_str(), detail.c_str());
  std::fflush(stdout);
}
// A driver call that must succeed for the pattern to mean anything.
bool call(CUresult rc, const std::string& what) {
  if (rc != CUDA_SUCCESS) check(false, what, "CUresult " + std::to_string(rc));
  return rc == CUDA_SUCCESS;
}

constexpr std::int64_t MiB = std::int64_t{1} << 20;
constexpr int kDevice = 0;  // CUDA ordinal checked

std::string mib(std::int64_t bytes) {
  if (bytes > -MiB && bytes < MiB) return std::to_string(bytes) + " B";
  char text[64];
  std::snprintf(text, sizeof text, "%.3f MiB", static_cast<double>(bytes) / MiB);
  return text;
}

// NVML's per-process used memory of this process on the device; nullopt where NVML does not list
// it (no NVML, a container's PID namespace, MIG without privileges).
std::optional<std::int64_t> nvml_own() {
  const unsigned self = static_cast<unsigned>(::getpid());
  for (const auto& process : gpumem::device_processes(kDevice)) {
    if (process.pid == self && process.used_bytes) {
      return static_cast<std::int64_t>(*process.used_bytes);
    }
  }
  return std::nullopt;
}

// Reads the counter, prints it beside NVML's figure, and checks that the level equals NVML's
// per-process figure taken right after (nothing allocates in between).
gpumem::PeakReading settle(const gpumem::PeakCounter& counter, const std::string& name) {
  const gpumem::PeakReading reading = counter.read();
  const auto nvml = nvml_own();
  std::printf(
      "  %s: %s; start %s, current %s, peak %s (rise %s); NVML per-process %s; device "
      "used start %s, peak %s\n",
      name.c_str(), gpumem::describe(reading).c_str(), mib(reading.start_bytes).c_str(),
      mib(reading.current_bytes).c_str(), mib(reading.peak_bytes).c_str(),
      mib(reading.peak_bytes - reading.start_bytes).c_str(),
      nvml ? mib(*nvml).c_str() : "not listed", mib(reading.device_used_start_bytes).c_str(),
      mib(reading.device_used_peak_bytes).c_str());
  if (nvml) {
    check(reading.current_bytes == *nvml, name + " level = NVML per-process",
          mib(reading.current_bytes) + " vs " + mib(*nvml) + " (difference " +
              mib(reading.current_bytes - *nvml) + ")");
  }
  return reading;
}

void check_peak(const gpumem::PeakReading& reading, std::int64_t high, const std::string& name) {
  const std::int64_t rise = reading.peak_bytes - reading.start_bytes;
  check(rise >= high, name + " peak", "rise " + mib(rise) + " >= " + mib(high));
}

bool exact(const gpumem::PeakCounter& counter, const std::string& pattern) {
  if (counter.source() == gpumem::Source::exact) return true;
  check(false, pattern,
        std::string("exact source unavailable (") +
            std::string(gpumem::to_string(counter.source())) +
            "): " + gpumem::exact_source_status());
  return false;
}

// A trace started before the context exists counts the context.
void context_pattern(const Driver& cu) {
  // Started before the program initialises CUDA, as a script's first line would.
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  CUdevice device = 0;
  unsigned flags = 0;
  int active = 0;
  if (!call(cu.init(0), "cuInit") || !call(cu.deviceGet(&device, kDevice), "cuDeviceGet")) return;
  cu.primaryCtxGetState(device, &flags, &active);
  info("context when the trace started", active ? "active (the check cannot see it made)" : "none");
  const std::string cupti = mapped_library("libcupti");
  info("CUPTI chosen", (cupti.empty() ? std::string("none mapped") : cupti) +
                           (std::getenv("GPUMEM_CUPTI_LIBRARY") ? " (GPUMEM_CUPTI_LIBRARY set)"
                                                                : " (gpumem's own choice)"));
  if (!exact(counter, "context")) return;
  CUcontext context = nullptr;
  CUdeviceptr block = 0;
  if (!call(cu.primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !call(cu.ctxSetCurrent(context), "cuCtxSetCurrent") ||
      !call(cu.memAlloc(&block, 10 * MiB), "cuMemAlloc 10 MiB")) {
    return;
  }
  const auto reading = settle(counter, "context + 10 MiB");
  const auto nvml = nvml_own();
  const std::int64_t rise = reading.peak_bytes - reading.start_bytes;
  if (nvml) {
    check(rise >= *nvml, "context counted",
          "footprint rise " + mib(rise) + " >= NVML per-process " + mib(*nvml));
    check((reading.covers & gpumem::coverage::context) != 0, "context covered",
          gpumem::describe_coverage(reading.covers));
  } else {
    std::string listed;
    for (const auto& process : gpumem::device_processes(kDevice)) {
      listed += " " + std::to_string(process.pid) + "=" +
                (process.used_bytes ? mib(static_cast<std::int64_t>(*process.used_bytes)) : "n/a");
    }
    info("NVML per-process figure",
         "this process (pid " + std::to_string(::getpid()) +
             ") is not listed; NVML lists:" + (listed.empty() ? " nothing" : listed) +
             " (a container's PID namespace?): the level checks "
             "against NVML are skipped");
    info("context counted", "not checkable without NVML's figure; rise " + mib(rise));
    check_peak(reading, 10 * MiB, "context + 10 MiB");
  }
  call(cu.memFree(block), "cuMemFree");
}

// cuMemAlloc/cuMemFree: 256 MiB kept, a 128 MiB blip; a 1-byte blip; a GPUMemTrace.
void alloc_pattern(const Driver& cu) {
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  if (!exact(counter, "cuMemAlloc")) return;
  CUdeviceptr kept = 0, blip = 0;
  if (!call(cu.memAlloc(&kept, 256 * MiB), "cuMemAlloc 256 MiB") ||
      !call(cu.memAlloc(&blip, 128 * MiB), "cuMemAlloc 128 MiB") ||
      !call(cu.memFree(blip), "cuMemFree 128 MiB")) {
    return;
  }
  auto reading = settle(counter, "cuMemAlloc 256 MiB kept, 128 MiB blip");
  check_peak(reading, 384 * MiB, "cuMemAlloc");
  call(cu.memFree(kept), "cuMemFree 256 MiB");
  reading = settle(counter, "cuMemAlloc all freed");

  counter.reset();
  CUdeviceptr one = 0;
  if (call(cu.memAlloc(&one, 1), "cuMemAlloc 1 B")) call(cu.memFree(one), "cuMemFree 1 B");
  reading = settle(counter, "1-byte blip");
  check_peak(reading, 1, "1-byte blip");

  gpumem::GPUMemTrace trace{gpumem::TraceOptions{.silent = true, .device = kDevice}};
  {
    auto kept_mb = gpumem::device_allocate(256 * MiB, kDevice);
    { auto blip_mb = gpumem::device_allocate(128 * MiB, kDevice); }
    trace.stop();
  }
  const auto bytes = trace.data_bytes();
  const auto [used, peaked] = trace.data();
  check(used >= 256 && used <= 258 && peaked >= 126 && peaked <= 130,
        "GPUMemTrace (" + std::string(gpumem::to_string(trace.source())) + ")",
        "△used " + std::to_string(used) + " MB, △peaked " + std::to_string(peaked) +
            " MB (256 / 128 made); start " + mib(bytes.start) + ", peak " + mib(bytes.peak));
}

// VMM: create → map → release while mapped → unmap. The memory lives until the unmap.
void vmm_pattern(const Driver& cu) {
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  if (!exact(counter, "VMM")) return;
  CUmemAllocationProp prop{};
  prop.type = 1;  // CU_MEM_ALLOCATION_TYPE_PINNED
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = kDevice;
  size_t granularity = 0;
  if (!call(cu.memGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity") ||
      granularity == 0) {
    return;
  }
  const size_t size = (64 * MiB + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr range = 0;
  if (!call(cu.memCreate(&handle, size, &prop, 0), "cuMemCreate") ||
      !call(cu.memAddressReserve(&range, size, 0, 0, 0), "cuMemAddressReserve") ||
      !call(cu.memMap(range, size, 0, handle, 0), "cuMemMap")) {
    return;
  }
  CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, kDevice}, 3};
  call(cu.memSetAccess(range, size, &access, 1), "cuMemSetAccess");
  if (!call(cu.memRelease(handle), "cuMemRelease while mapped")) return;
  auto reading = settle(counter, "VMM released while mapped");
  const std::int64_t held = reading.current_bytes - reading.start_bytes;
  check(held >= static_cast<std::int64_t>(size), "VMM lives after release",
        "level rise " + mib(held) + " >= handle " + mib(static_cast<std::int64_t>(size)));
  if (!call(cu.memUnmap(range, size), "cuMemUnmap") ||
      !call(cu.memAddressFree(range, size), "cuMemAddressFree")) {
    return;
  }
  reading = settle(counter, "VMM unmapped");
  check_peak(reading, static_cast<std::int64_t>(size), "VMM");
  const std::int64_t left = reading.current_bytes - reading.start_bytes;
  check(left < static_cast<std::int64_t>(size), "VMM freed at unmap",
        "level rise after unmap " + mib(left));
}

std::uint64_t pool_attribute(const Driver& cu, CUmemoryPool pool, int attribute) {
  std::uint64_t value = 0;
  cu.memPoolGetAttribute(pool, attribute, &value);
  return value;
}

// Stream-ordered: the footprint holds the pool's reservation, not its live blocks.
void pool_pattern(const Driver& cu) {
  CUmemoryPool pool = nullptr;
  if (!call(cu.deviceGetMemPool(&pool, kDevice), "cuDeviceGetMemPool")) return;
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  if (!exact(counter, "pool")) return;
  const std::int64_t base = counter.read().current_bytes;
  const auto reserved0 =
      static_cast<std::int64_t>(pool_attribute(cu, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
  // The footprint is the pool's reservation plus the rest (what was there before).
  const auto expect_reserved = [&](const gpumem::PeakReading& reading, const std::string& name) {
    const auto reserved =
        static_cast<std::int64_t>(pool_attribute(cu, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
    check(reading.current_bytes == base + reserved - reserved0, name + " = pool reservation",
          "level " + mib(reading.current_bytes) + ", the rest " + mib(base) + " + reserved " +
              mib(reserved) + " (" + mib(reserved0) + " before)");
  };
  CUdeviceptr a = 0, b = 0;
  if (!call(cu.memAllocAsync(&a, 48 * MiB, nullptr), "cuMemAllocAsync 48 MiB") ||
      !call(cu.memAllocAsync(&b, 16 * MiB, nullptr), "cuMemAllocAsync 16 MiB") ||
      !call(cu.memFreeAsync(a, nullptr), "cuMemFreeAsync") ||
      !call(cu.memFreeAsync(b, nullptr), "cuMemFreeAsync")) {
    return;
  }
  auto reading = settle(counter, "pool freed, not synchronised");
  expect_reserved(reading, "pool freed, not synchronised");
  check_peak(reading, 64 * MiB, "pool");
  call(cu.streamSynchronize(nullptr), "cuStreamSynchronize");
  info("pool at synchronisation, release threshold 0",
       "reserved " +
           mib(static_cast<std::int64_t>(
               pool_attribute(cu, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT))) +
           ", reserved high " +
           mib(static_cast<std::int64_t>(
               pool_attribute(cu, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH))));
  reading = settle(counter, "pool synchronised");
  expect_reserved(reading, "pool synchronised");

  std::uint64_t threshold = 256 * MiB;
  if (!call(cu.memPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            "cuMemPoolSetAttribute release threshold")) {
    return;
  }
  counter.reset();
  if (call(cu.memAllocAsync(&a, 96 * MiB, nullptr), "cuMemAllocAsync 96 MiB") &&
      call(cu.memFreeAsync(a, nullptr), "cuMemFreeAsync")) {
    call(cu.streamSynchronize(nullptr), "cuStreamSynchronize");
    reading = settle(counter, "pool retained under its threshold");
    expect_reserved(reading, "pool retained under its threshold");
    check_peak(reading, 96 * MiB, "pool with a threshold");
    call(cu.memPoolTrimTo(pool, 0), "cuMemPoolTrimTo 0");
    reading = settle(counter, "pool trimmed");
    expect_reserved(reading, "pool trimmed");
  }
  threshold = 0;
  cu.memPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
}

// Graph memory: an allocation node and its free, launched; the reservation until trimmed.
void graph_pattern(const Driver& cu) {
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  if (!exact(counter, "graph")) return;
  const std::int64_t base = counter.read().current_bytes;
  CUgraph graph = nullptr;
  if (!call(cu.graphCreate(&graph, 0), "cuGraphCreate")) return;
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = 1;  // CU_MEM_ALLOCATION_TYPE_PINNED
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, kDevice};
  params.bytesize = 64 * MiB;
  CUgraphNode alloc = nullptr, free_node = nullptr;
  CUgraphExec exec = nullptr;
  const bool made =
      call(cu.graphAddMemAllocNode(&alloc, graph, nullptr, 0, &params), "cuGraphAddMemAllocNode") &&
      call(cu.graphAddMemFreeNode(&free_node, graph, &alloc, 1, params.dptr),
           "cuGraphAddMemFreeNode") &&
      call(cu.graphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags") &&
      call(cu.graphLaunch(exec, nullptr), "cuGraphLaunch") &&
      call(cu.streamSynchronize(nullptr), "cuStreamSynchronize");
  const auto graph_reserved = [&] {
    std::uint64_t reserved = 0;
    cu.deviceGetGraphMemAttribute(kDevice, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved);
    return static_cast<std::int64_t>(reserved);
  };
  if (made) {
    const std::int64_t reserved = graph_reserved();
    info("graph reservation after launch", mib(reserved));
    const auto reading = settle(counter, "graph launched");
    check(reading.current_bytes == base + reserved, "graph launched = graph reservation",
          "level " + mib(reading.current_bytes) + ", the rest " + mib(base) + " + reserved " +
              mib(reserved));
  }
  if (exec != nullptr) call(cu.graphExecDestroy(exec), "cuGraphExecDestroy");
  call(cu.graphDestroy(graph), "cuGraphDestroy");
  if (!made) return;
  call(cu.deviceGraphMemTrim(kDevice), "cuDeviceGraphMemTrim");
  const std::int64_t reserved = graph_reserved();
  info("graph reservation after trim", mib(reserved));
  const auto reading = settle(counter, "graph trimmed");
  check(reading.current_bytes == base + reserved, "graph trimmed = graph reservation",
        "level " + mib(reading.current_bytes) + ", reserved " + mib(reserved));
  check_peak(reading, 64 * MiB, "graph");
}

// Runtime calls (cudaMalloc, cudaMallocAsync) reaching the driver: counted once.
void runtime_pattern(const Runtime& rt) {
  if (!rt.usable()) {
    info("runtime", "skipped: no CUDA runtime (set REAL_GPU_CHECK_CUDART to a libcudart.so)");
    return;
  }
  info("runtime", rt.path);
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  if (!exact(counter, "runtime")) return;
  void* block = nullptr;
  if (rt.setDevice(kDevice) != 0 || rt.cudaMalloc(&block, 64 * MiB) != 0 ||
      rt.cudaFree(block) != 0) {
    check(false, "runtime", "cudaSetDevice/cudaMalloc/cudaFree failed");
    return;
  }
  if (rt.mallocAsync(&block, 32 * MiB, nullptr) != 0 || rt.freeAsync(block, nullptr) != 0 ||
      rt.streamSynchronize(nullptr) != 0) {
    check(false, "runtime", "cudaMallocAsync/cudaFreeAsync failed");
    return;
  }
  const auto reading = settle(counter, "cudaMalloc 64 MiB, cudaMallocAsync 32 MiB");
  check_peak(reading, 64 * MiB, "runtime");
  const std::int64_t rise = reading.peak_bytes - reading.start_bytes;
  check(rise < 128 * MiB, "runtime counted once", "rise " + mib(rise) + " < 128 MiB");
}

// What real CUPTI raises for runtime calls: the driver functions called inside each one.
struct Observed {
  std::string runtime;  // the runtime call in progress on this thread
  std::map<std::string, std::vector<std::string>> inside;
};
thread_local Observed* observing = nullptr;

void on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  auto* observed = static_cast<Observed*>(user);
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (observing != observed || cb == nullptr || cb->functionName == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_ENTER && observed->runtime.empty()) {
      observed->runtime = cb->functionName;
      observed->inside[observed->runtime];
    } else if (cb->callbackSite == CUPTI_API_EXIT && observed->runtime == cb->functionName) {
      observed->runtime.clear();
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cb->callbackSite == CUPTI_API_ENTER &&
             !observed->runtime.empty()) {
    observed->inside[observed->runtime].push_back(cb->functionName);
  }
}

void observe_runtime_callbacks(const Runtime& rt) {
  const std::string path = mapped_library("libcupti");
  if (!rt.usable() || path.empty()) {
    info("runtime callbacks", "not observed (no runtime or no CUPTI loaded)");
    return;
  }
  void* cupti = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  const auto subscribe = symbol<PFN_cuptiSubscribe>(cupti, "cuptiSubscribe");
  const auto unsubscribe = symbol<PFN_cuptiUnsubscribe>(cupti, "cuptiUnsubscribe");
  const auto enable = symbol<PFN_cuptiEnableDomain>(cupti, "cuptiEnableDomain");
  if (subscribe == nullptr || unsubscribe == nullptr || enable == nullptr) return;
  Observed observed;
  CUpti_SubscriberHandle handle = nullptr;
  const CUptiResult rc = subscribe(&handle, &on_callback, &observed);
  if (rc != CUPTI_SUCCESS) {
    info("runtime callbacks", "not observed: cuptiSubscribe " + std::to_string(rc) +
                                  " (gpumem's subscription should be gone with its counters)");
    return;
  }
  enable(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API);
  enable(1, handle, CUPTI_CB_DOMAIN_DRIVER_API);
  observing = &observed;
  void* block = nullptr;
  if (rt.cudaMalloc(&block, 8 * MiB) == 0) rt.cudaFree(block);
  if (rt.mallocAsync(&block, 8 * MiB, nullptr) == 0) rt.freeAsync(block, nullptr);
  rt.streamSynchronize(nullptr);
  observing = nullptr;
  unsubscribe(handle);
  for (const auto& [call_name, driver_calls] : observed.inside) {
    std::string list;
    for (const auto& name : driver_calls) list += (list.empty() ? "" : ", ") + name;
    info("driver callbacks inside " + call_name, list.empty() ? "none" : list);
  }
}

// The child run (GPUMEM_NVML_LIBRARY=/nonexistent): exact without NVML.
int without_nvml(const Driver& cu) {
  check(!gpumem::nvml_available(), "without NVML: NVML unavailable",
        gpumem::diagnostics().empty() ? "(no diagnostic)" : gpumem::diagnostics().front());
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (!call(cu.init(0), "cuInit") || !call(cu.deviceGet(&device, kDevice), "cuDeviceGet") ||
      !call(cu.primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !call(cu.ctxSetCurrent(context), "cuCtxSetCurrent")) {
    return 1;
  }
  // Once the program has initialised CUDA, the driver names the devices.
  const auto all = gpumem::devices();
  check(!all.empty() && !all[0].uuid.empty(), "without NVML: identity from the driver",
        all.empty() ? "no devices" : all[0].name + " " + all[0].uuid);
  gpumem::PeakCounter counter(kDevice, gpumem::Source::exact);
  check(counter.source() == gpumem::Source::exact, "without NVML: exact source",
        std::string(gpumem::to_string(counter.source())) + " " + gpumem::exact_source_status());
  CUdeviceptr kept = 0, blip = 0;
  if (!call(cu.memAlloc(&kept, 32 * MiB), "cuMemAlloc 32 MiB") ||
      !call(cu.memAlloc(&blip, 64 * MiB), "cuMemAlloc 64 MiB") ||
      !call(cu.memFree(blip), "cuMemFree 64 MiB")) {
    return 1;
  }
  const auto reading = counter.read();
  std::printf("  without NVML: %s; start %s, current %s, peak %s; device used start %s, peak %s\n",
              gpumem::describe(reading).c_str(), mib(reading.start_bytes).c_str(),
              mib(reading.current_bytes).c_str(), mib(reading.peak_bytes).c_str(),
              mib(reading.device_used_start_bytes).c_str(),
              mib(reading.device_used_peak_bytes).c_str());
  check(reading.peak_bytes - reading.start_bytes == 96 * MiB &&
            reading.current_bytes - reading.start_bytes == 32 * MiB,
        "without NVML: exact peak",
        "rise to peak " + mib(reading.peak_bytes - reading.start_bytes) + " (96 made), level " +
            mib(reading.current_bytes - reading.start_bytes) + " (32)");
  check((reading.covers & gpumem::coverage::context) == 0, "without NVML: says it misses context",
        gpumem::describe_coverage(reading.covers));
  check(reading.device_used_start_bytes > 0 &&
            reading.device_used_peak_bytes >= reading.device_used_start_bytes + 96 * MiB,
        "without NVML: device used from the driver",
        "start " + mib(reading.device_used_start_bytes) + ", peak " +
            mib(reading.device_used_peak_bytes));
  cu.memFree(kept);
  std::printf("without NVML: %d failed\n", failures);
  return failures == 0 ? 0 : 1;
}

void spawn_without_nvml() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("GPUMEM_NVML_LIBRARY=", 0) != 0) env.emplace_back(*e);
  }
  env.emplace_back("GPUMEM_NVML_LIBRARY=/nonexistent");
  std::vector<char*> envp;
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", flag = "--without-nvml";
  char* argv[] = {self.data(), flag.data(), nullptr};
  std::fflush(stdout);
  pid_t child = 0;
  int status = 0;
  if (::posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0 ||
      ::waitpid(child, &status, 0) != child) {
    check(false, "without NVML", "cannot run the child");
    return;
  }
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "without NVML (child run)",
        "status " + std::to_string(status));
}

}  // namespace

int main(int argc, char** argv) {
  const Driver cu;
  if (!cu.missing.empty()) {
    check(false, "driver", "cannot resolve " + cu.missing);
    return 1;
  }
  if (argc > 1 && std::string(argv[1]) == "--without-nvml") return without_nvml(cu);

  const auto all = gpumem::devices();
  check(!all.empty(), "devices", std::to_string(all.size()) + " visible");
  for (const auto& why : gpumem::diagnostics()) std::printf("diagnostic: %s\n", why.c_str());
  if (all.empty()) return 1;
  for (const auto& device : all) {
    std::printf("device %d: nvml %u %s %s %s total=%llu used=%llu free=%llu reserved=%llu\n",
                device.device, device.nvml_index, device.name.c_str(), device.uuid.c_str(),
                device.pci_bus_id.c_str(), static_cast<unsigned long long>(device.memory.total),
                static_cast<unsigned long long>(device.memory.used),
                static_cast<unsigned long long>(device.memory.free),
                static_cast<unsigned long long>(device.memory.reserved));
    const auto mb = gpumem::gpu_mem_get(device.device);
    check(mb.total == gpumem::b2mb(static_cast<std::int64_t>(device.memory.total)),
          "gpu_mem_get(" + std::to_string(device.device) + ")", std::to_string(mb.total) + " MB");
  }
  check(gpumem::gpu_mem_get(static_cast<int>(all.size())) == gpumem::GPUMemory{}, "invalid id",
        "zeros");

  std::printf("\n-- a trace started before the CUDA context\n");
  context_pattern(cu);
  check(gpumem::preload(), "preload", "primary context exists");
  std::printf("\n-- cuMemAlloc / cuMemFree\n");
  alloc_pattern(cu);
  std::printf("\n-- VMM: create, map, release while mapped, unmap\n");
  vmm_pattern(cu);
  std::printf("\n-- stream-ordered pool\n");
  pool_pattern(cu);
  std::printf("\n-- graph memory\n");
  graph_pattern(cu);
  std::printf("\n-- runtime calls\n");
  const Runtime rt;
  runtime_pattern(rt);
  observe_runtime_callbacks(rt);
  std::printf("\n-- exact without NVML (a child run, GPUMEM_NVML_LIBRARY=/nonexistent)\n");
  spawn_without_nvml();
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
