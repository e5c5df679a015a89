#include "driver/nvml.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "gpumem/internal/shared_library.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::driver {

using support::SharedLibrary;

namespace {

using namespace abi;

Nvml load_nvml() {
  Nvml api;
  // Leaked on purpose: the handle must outlive every reader, including other threads at exit.
  static auto* library = new SharedLibrary(
      SharedLibrary::open("GPUMEM_NVML_LIBRARY", {"libnvidia-ml.so.1", "libnvidia-ml.so"}));
  if (!library->loaded()) {
    api.why = "NVML not found (" + library->error() + ")";
    return api;
  }
  const SharedLibrary& lib = *library;

  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (auto init_flags = lib.function<PFN_nvmlInitWithFlags>("nvmlInitWithFlags")) {
    rc = init_flags(0);
  } else if (auto init = lib.function<PFN_nvmlInit_v2>({"nvmlInit_v2", "nvmlInit"})) {
    rc = init();
  } else {
    api.why = "NVML: no nvmlInit in " + lib.path();
    return api;
  }
  if (rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH) {
    api.why = "NVML: driver/library version mismatch (NVML_ERROR_LIB_RM_VERSION_MISMATCH)";
    return api;
  }
  if (rc != NVML_SUCCESS) {
    api.why = "NVML: initialisation failed (" + nvml_error_name(rc) + ")";
    return api;
  }

  api.systemGetDriverVersion =
      lib.function<PFN_nvmlSystemGetDriverVersion>("nvmlSystemGetDriverVersion");
  api.deviceGetCount =
      lib.function<PFN_nvmlDeviceGetCount>({"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  api.deviceGetHandleByIndex = lib.function<PFN_nvmlDeviceGetHandleByIndex>(
      {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  api.deviceGetHandleByUUID =
      lib.function<PFN_nvmlDeviceGetHandleByUUID>("nvmlDeviceGetHandleByUUID");
  api.deviceGetHandleByPciBusId = lib.function<PFN_nvmlDeviceGetHandleByPciBusId>(
      {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  api.deviceGetIndex = lib.function<PFN_nvmlDeviceGetIndex>("nvmlDeviceGetIndex");
  api.deviceGetMaxMigDeviceCount =
      lib.function<PFN_nvmlDeviceGetMaxMigDeviceCount>("nvmlDeviceGetMaxMigDeviceCount");
  api.deviceGetMigDeviceHandleByIndex =
      lib.function<PFN_nvmlDeviceGetMigDeviceHandleByIndex>("nvmlDeviceGetMigDeviceHandleByIndex");
  api.deviceGetName = lib.function<PFN_nvmlDeviceGetName>("nvmlDeviceGetName");
  api.deviceGetUUID = lib.function<PFN_nvmlDeviceGetUUID>("nvmlDeviceGetUUID");
  api.deviceGetPciInfo = lib.function<PFN_nvmlDeviceGetPciInfo>(
      {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  api.deviceGetMemoryInfo = lib.function<PFN_nvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  api.deviceGetMemoryInfo_v2 =
      lib.function<PFN_nvmlDeviceGetMemoryInfo_v2>("nvmlDeviceGetMemoryInfo_v2");
  api.deviceGetRunningProcessDetailList = lib.function<PFN_nvmlDeviceGetRunningProcessDetailList>(
      "nvmlDeviceGetRunningProcessDetailList");
  struct Version {
    int number;
    const char* compute;
    const char* graphics;
  };
  for (const Version& v : {Version{3, "nvmlDeviceGetComputeRunningProcesses_v3",
                                   "nvmlDeviceGetGraphicsRunningProcesses_v3"},
                           Version{2, "nvmlDeviceGetComputeRunningProcesses_v2",
                                   "nvmlDeviceGetGraphicsRunningProcesses_v2"},
                           Version{1, "nvmlDeviceGetComputeRunningProcesses",
                                   "nvmlDeviceGetGraphicsRunningProcesses"}}) {
    if (auto compute = lib.function<PFN_nvmlDeviceGetRunningProcesses>(v.compute)) {
      api.deviceGetComputeRunningProcesses = compute;
      api.deviceGetGraphicsRunningProcesses =
          lib.function<PFN_nvmlDeviceGetRunningProcesses>(v.graphics);
      api.runningProcessesVersion = v.number;
      break;
    }
  }

  if (api.deviceGetCount == nullptr || api.deviceGetHandleByIndex == nullptr ||
      (api.deviceGetMemoryInfo == nullptr && api.deviceGetMemoryInfo_v2 == nullptr)) {
    api.why = "NVML: " + lib.path() + " lacks the device count, handle or memory functions";
    return api;
  }
  api.ready = true;
  return api;
}

// Which memory-info version answers on this driver; decided by the first successful read.
enum MemoryApi : int { kMemoryUnknown = 0, kMemoryV1 = 1, kMemoryV2 = 2 };
std::atomic<int> g_memory_api{kMemoryUnknown};

void remember_memory_api(const Nvml& api, MemoryApi chosen) noexcept {
  g_memory_api.store(chosen, std::memory_order_relaxed);
  g_working_memory_v2.store(chosen == kMemoryV2 ? api.deviceGetMemoryInfo_v2 : nullptr,
                            std::memory_order_release);
}

nvmlReturn_t read_v2(const Nvml& api, nvmlDevice_t device, MemoryReading& reading) noexcept {
  nvmlMemory_v2_t memory{};
  memory.version = kNvmlMemory_v2;
  const nvmlReturn_t rc = api.deviceGetMemoryInfo_v2(device, &memory);
  if (rc == NVML_SUCCESS) {
    reading = {memory.total, memory.free, memory.used, memory.reserved};
  }
  return rc;
}

nvmlReturn_t read_v1(const Nvml& api, nvmlDevice_t device, MemoryReading& reading) noexcept {
  nvmlMemory_t memory{};
  const nvmlReturn_t rc = api.deviceGetMemoryInfo(device, &memory);
  if (rc == NVML_SUCCESS) reading = {memory.total, memory.free, memory.used, 0};
  return rc;
}

// The driver lacks this entry point or this version of it (as opposed to a device error).
bool api_missing(nvmlReturn_t rc) {
  return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED ||
         rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

// The first reads, and any read after the remembered version stopped answering.
nvmlReturn_t negotiate_memory_info(const Nvml& api, nvmlDevice_t device,
                                   MemoryReading& reading) noexcept {
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (api.deviceGetMemoryInfo_v2 != nullptr) {
    rc = read_v2(api, device, reading);
    if (rc == NVML_SUCCESS) {
      remember_memory_api(api, kMemoryV2);
      return rc;
    }
    if (!api_missing(rc)) return rc;  // a device error (lost, …), not a version problem
  }
  if (api.deviceGetMemoryInfo != nullptr) {
    const nvmlReturn_t v1 = read_v1(api, device, reading);
    if (v1 == NVML_SUCCESS) remember_memory_api(api, kMemoryV1);
    return v1;
  }
  return rc;
}

void add_record(std::vector<ProcessRecord>& out, unsigned pid, unsigned long long used) {
  for (ProcessRecord& record : out) {
    if (record.pid != pid) continue;
    // A process doing compute and graphics appears in both lists with the same memory.
    if (record.used_bytes == NVML_VALUE_NOT_AVAILABLE ||
        (used != NVML_VALUE_NOT_AVAILABLE && used > record.used_bytes)) {
      record.used_bytes = used;
    }
    return;
  }
  out.push_back({pid, used});
}

nvmlReturn_t detail_list_mode(PFN_nvmlDeviceGetRunningProcessDetailList list_fn,
                              nvmlDevice_t device, unsigned mode, std::vector<ProcessRecord>& out) {
  std::vector<nvmlProcessDetail_v1_t> details;
  nvmlProcessDetailList_v1_t list{};
  list.version = kNvmlProcessDetailList_v1;
  list.mode = mode;
  for (int attempt = 0; attempt < 4; ++attempt) {
    list.numProcArrayEntries = static_cast<unsigned>(details.size());
    list.procArray = details.empty() ? nullptr : details.data();
    const nvmlReturn_t rc = list_fn(device, &list);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      details.assign(list.numProcArrayEntries * 2 + 5, nvmlProcessDetail_v1_t{});
      continue;
    }
    if (rc != NVML_SUCCESS) return rc;
    const unsigned n =
        std::min<unsigned>(list.numProcArrayEntries, static_cast<unsigned>(details.size()));
    for (unsigned i = 0; i < n; ++i) add_record(out, details[i].pid, details[i].usedGpuMemory);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

std::atomic<std::size_t> g_v3_stride{0};

constexpr unsigned char kPatternA = 0xAA;
constexpr unsigned char kPatternB = 0x55;

// The bytes the driver wrote: those that differ from the fill pattern in either of two calls
// (a written byte cannot equal both patterns).
std::size_t written_extent(const std::vector<unsigned char>& a,
                           const std::vector<unsigned char>* b) {
  for (std::size_t i = a.size(); i > 0; --i) {
    if (a[i - 1] != kPatternA) return i;
    if (b != nullptr && (*b)[i - 1] != kPatternB) return i;
  }
  return 0;
}

nvmlReturn_t legacy_list(PFN_nvmlDeviceGetRunningProcesses fn, int version, nvmlDevice_t device,
                         std::vector<ProcessRecord>& out) {
  unsigned count = 0;
  nvmlReturn_t rc = fn(device, &count, nullptr);
  if (rc == NVML_SUCCESS) return rc;  // nothing running
  if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return rc;
  // Room for the widest record the version may write, so a 32-byte driver cannot overrun.
  const std::size_t max_stride = version == 3 ? 32 : version == 2 ? 24 : 16;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const unsigned capacity = count * 2 + 5;
    std::vector<unsigned char> buffer(capacity * max_stride, kPatternA);
    unsigned n = capacity;
    rc = fn(device, &n, buffer.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      count = n;
      continue;
    }
    if (rc != NVML_SUCCESS) return rc;
    n = std::min(n, capacity);
    std::size_t stride = max_stride;
    if (version == 3) {
      stride = g_v3_stride.load(std::memory_order_relaxed);
      if (stride == 0 && n > 0) {
        std::vector<unsigned char> second(buffer.size(), kPatternB);
        unsigned n2 = capacity;
        const bool same = fn(device, &n2, second.data()) == NVML_SUCCESS && n2 == n;
        const std::size_t extent = written_extent(buffer, same ? &second : nullptr);
        stride = extent > std::size_t{n} * 24 ? 32 : 24;
        g_v3_stride.store(stride, std::memory_order_relaxed);
      }
      if (stride == 0) stride = 24;
    }
    for (unsigned i = 0; i < n; ++i) {
      unsigned pid = 0;
      unsigned long long used = 0;
      std::memcpy(&pid, buffer.data() + i * stride, sizeof pid);
      std::memcpy(&used, buffer.data() + i * stride + 8, sizeof used);
      add_record(out, pid, used);
    }
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

const char* code_name(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY:
      return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_NOT_READY:
      return "NVML_ERROR_NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
    default:
      return nullptr;
  }
}

}  // namespace

std::atomic<abi::PFN_nvmlDeviceGetMemoryInfo_v2> g_working_memory_v2{nullptr};

const Nvml& nvml() noexcept {
  // Never destroyed: queries may run from other threads or static destructors at exit.
  static const Nvml& api = *[] {
    auto* loaded = new Nvml(load_nvml());
    if (!loaded->ready) support::record_diagnostic(loaded->why);
    return loaded;
  }();
  return api;
}

std::string nvml_error_name(abi::nvmlReturn_t code) {
  if (const char* name = code_name(code)) return name;
  return "NVML_ERROR_" + std::to_string(code);
}

abi::nvmlReturn_t memory_info(abi::nvmlDevice_t device, MemoryReading& reading) noexcept {
  const Nvml& api = nvml();
  if (!api.ready) return NVML_ERROR_UNINITIALIZED;
  switch (g_memory_api.load(std::memory_order_relaxed)) {
    case kMemoryV2: {
      const nvmlReturn_t rc = read_v2(api, device, reading);
      if (!api_missing(rc)) return rc;
      break;
    }
    case kMemoryV1: {
      const nvmlReturn_t rc = read_v1(api, device, reading);
      if (rc != NVML_ERROR_NOT_SUPPORTED) return rc;
      break;
    }
    default:
      break;
  }
  return negotiate_memory_info(api, device, reading);
}

abi::nvmlReturn_t detail_list_processes(abi::nvmlDevice_t device,
                                        std::vector<ProcessRecord>& out) noexcept {
  const Nvml& api = nvml();
  if (!api.ready) return NVML_ERROR_UNINITIALIZED;
  if (api.deviceGetRunningProcessDetailList == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  try {
    std::vector<ProcessRecord> found;
    const nvmlReturn_t compute =
        detail_list_mode(api.deviceGetRunningProcessDetailList, device, 0, found);
    if (compute != NVML_SUCCESS) return compute;
    const nvmlReturn_t graphics =
        detail_list_mode(api.deviceGetRunningProcessDetailList, device, 1, found);
    if (graphics != NVML_SUCCESS && !api_missing(graphics)) return graphics;
    out = std::move(found);
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_MEMORY;
  }
}

abi::nvmlReturn_t legacy_processes(abi::nvmlDevice_t device,
                                   std::vector<ProcessRecord>& out) noexcept {
  const Nvml& api = nvml();
  if (!api.ready) return NVML_ERROR_UNINITIALIZED;
  if (api.deviceGetComputeRunningProcesses == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  try {
    std::vector<ProcessRecord> found;
    const nvmlReturn_t compute = legacy_list(api.deviceGetComputeRunningProcesses,
                                             api.runningProcessesVersion, device, found);
    if (compute != NVML_SUCCESS) return compute;
    if (api.deviceGetGraphicsRunningProcesses != nullptr) {
      const nvmlReturn_t graphics = legacy_list(api.deviceGetGraphicsRunningProcesses,
                                                api.runningProcessesVersion, device, found);
      if (graphics != NVML_SUCCESS && !api_missing(graphics)) return graphics;
    }
    out = std::move(found);
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_MEMORY;
  }
}

abi::nvmlReturn_t running_processes(abi::nvmlDevice_t device,
                                    std::vector<ProcessRecord>& out) noexcept {
  const nvmlReturn_t rc = detail_list_processes(device, out);
  if (!api_missing(rc)) return rc;
  return legacy_processes(device, out);
}

std::size_t probed_process_stride() noexcept {
  return g_v3_stride.load(std::memory_order_relaxed);
}

}  // namespace gpumem::driver
