#include "identity/device_map.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/internal/device_uuid.hpp"
#include "identity/visible_devices.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem::identity {

namespace {

using namespace abi;

std::mutex& build_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

// Every snapshot ever published, kept so that references handed out stay valid.
std::vector<std::unique_ptr<DeviceMap>>& snapshots() {
  static auto* all = new std::vector<std::unique_ptr<DeviceMap>>;
  return *all;
}

// "0000:19:00.0" (CUDA) and "00000000:19:00.0" (NVML) name the same board.
std::optional<std::array<unsigned long, 4>> parse_bus_id(const char* text) {
  std::array<unsigned long, 4> parts{};
  char* end = nullptr;
  const char* cursor = text;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    parts[i] = std::strtoul(cursor, &end, 16);
    if (end == cursor) return std::nullopt;
    const char expected = i < 2 ? ':' : i == 2 ? '.' : '\0';
    if (*end != expected) return std::nullopt;
    cursor = end + (expected != '\0' ? 1 : 0);
  }
  return parts;
}

// NVML's form, "00000000:19:00.0", whichever form the driver wrote.
std::string normalised_bus_id(const char* text) {
  const auto parts = parse_bus_id(text);
  if (!parts) return text;
  char out[80];
  std::snprintf(out, sizeof out, "%08lX:%02lX:%02lX.%lX", (*parts)[0], (*parts)[1], (*parts)[2],
                (*parts)[3]);
  return out;
}

// The bus id from whichever nvmlPciInfo_t generation the driver filled: v1 writes only the
// 16-byte field at the start.
std::string bus_id_of(nvmlPciInfo_t& info) {
  info.busId[sizeof info.busId - 1] = '\0';
  info.busIdLegacy[sizeof info.busIdLegacy - 1] = '\0';
  return normalised_bus_id(info.busId[0] != '\0' ? info.busId : info.busIdLegacy);
}

void describe(const driver::Nvml& nvml, nvmlDevice_t handle, std::string& uuid, std::string& pci) {
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (nvml.deviceGetUUID != nullptr &&
      nvml.deviceGetUUID(handle, text, sizeof text) == NVML_SUCCESS) {
    uuid = text;
  }
  nvmlPciInfo_t info{};
  if (nvml.deviceGetPciInfo != nullptr && nvml.deviceGetPciInfo(handle, &info) == NVML_SUCCESS) {
    pci = bus_id_of(info);
  }
}

// From CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER, as CUDA would enumerate them.
// The MIG instances under a GPU, each with its index there; none where MIG is off or unknown.
std::vector<std::pair<nvmlDevice_t, unsigned>> mig_instances(const driver::Nvml& nvml,
                                                             nvmlDevice_t gpu) {
  std::vector<std::pair<nvmlDevice_t, unsigned>> found;
  unsigned most = 0;
  if (gpu == nullptr || nvml.deviceGetMaxMigDeviceCount == nullptr ||
      nvml.deviceGetMigDeviceHandleByIndex == nullptr ||
      nvml.deviceGetMaxMigDeviceCount(gpu, &most) != NVML_SUCCESS) {
    return found;
  }
  for (unsigned index = 0; index < most; ++index) {
    nvmlDevice_t mig = nullptr;
    if (nvml.deviceGetMigDeviceHandleByIndex(gpu, index, &mig) == NVML_SUCCESS) {
      found.emplace_back(mig, index);
    }
  }
  return found;
}

void map_from_environment(const driver::Nvml& nvml, DeviceMap& map) {
  unsigned count = 0;
  if (nvml.deviceGetCount(&count) != NVML_SUCCESS) return;
  std::vector<NvmlDeviceId> all;
  std::vector<nvmlDevice_t> handles(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    NvmlDeviceId id;
    id.nvml_index = i;
    if (nvml.deviceGetHandleByIndex(i, &handles[i]) == NVML_SUCCESS) {
      describe(nvml, handles[i], id.uuid, id.pci_bus_id);
    } else {
      handles[i] = nullptr;
    }
    all.push_back(std::move(id));
  }
  std::optional<std::string_view> visible;
  if (const char* text = map.environment.value(0)) visible = text;
  const std::vector<NvmlDeviceId> ordered = base_order(all);
  // A MIG instance has no NVML index: it is found under its GPU, keyed after the GPUs here.
  std::vector<NvmlDeviceId> instances;
  std::vector<unsigned> instance_index;  // within its GPU, what nvmlDeviceGetIndex would say
  if (visible && visible->find("MIG-") != std::string_view::npos) {
    for (unsigned gpu = 0; gpu < count; ++gpu) {
      for (const auto& [mig, index] : mig_instances(nvml, handles[gpu])) {
        NvmlDeviceId id;
        id.nvml_index = static_cast<unsigned>(handles.size());
        describe(nvml, mig, id.uuid, id.pci_bus_id);
        handles.push_back(mig);
        instances.push_back(id);
        all.push_back(std::move(id));
        instance_index.push_back(index);
      }
    }
  }
  for (unsigned key : visible_nvml_indices(visible, ordered, instances)) {
    MappedDevice device;
    device.ordinal = static_cast<int>(map.devices.size());
    device.handle = handles[key];
    device.nvml_index = key < count ? key : instance_index[key - count];
    device.uuid = all[key].uuid;
    device.pci_bus_id = all[key].pci_bus_id;
    map.devices.push_back(std::move(device));
  }
}

// For NVMLs without lookup by UUID or bus id (old drivers): compare every device's bus id.
nvmlDevice_t handle_by_bus_scan(const driver::Nvml& nvml, const char* cuda_bus_id) {
  const auto wanted = parse_bus_id(cuda_bus_id);
  unsigned count = 0;
  if (!wanted || nvml.deviceGetPciInfo == nullptr || nvml.deviceGetCount(&count) != NVML_SUCCESS) {
    return nullptr;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    nvmlPciInfo_t info{};
    if (nvml.deviceGetHandleByIndex(i, &handle) != NVML_SUCCESS ||
        nvml.deviceGetPciInfo(handle, &info) != NVML_SUCCESS) {
      continue;
    }
    if (parse_bus_id(bus_id_of(info).c_str()) == wanted) return handle;
  }
  return nullptr;
}

nvmlDevice_t handle_for_cuda_device(const driver::Nvml& nvml, const driver::Cuda& cuda,
                                    CUdevice device) {
  nvmlDevice_t handle = nullptr;
  CUuuid uuid{};
  if (cuda.deviceGetUuid != nullptr && nvml.deviceGetHandleByUUID != nullptr &&
      cuda.deviceGetUuid(&uuid, device) == CUDA_SUCCESS) {
    nvmlReturn_t rc = nvml.deviceGetHandleByUUID(format_uuid("GPU-", uuid.bytes).c_str(), &handle);
    if (rc == NVML_ERROR_NOT_FOUND) {
      rc = nvml.deviceGetHandleByUUID(format_uuid("MIG-", uuid.bytes).c_str(), &handle);
    }
    if (rc == NVML_SUCCESS) return handle;
  }
  // No UUID match (an old driver without UUID lookup, say): the PCI bus id names the board.
  char bus_id[32] = {};
  if (cuda.deviceGetPCIBusId == nullptr ||
      cuda.deviceGetPCIBusId(bus_id, sizeof bus_id, device) != CUDA_SUCCESS) {
    return nullptr;
  }
  if (nvml.deviceGetHandleByPciBusId != nullptr &&
      nvml.deviceGetHandleByPciBusId(bus_id, &handle) == NVML_SUCCESS) {
    return handle;
  }
  return handle_by_bus_scan(nvml, bus_id);
}

// The device's UUID and PCI bus id as the CUDA driver gives them (no NVML needed).
void describe_by_driver(const driver::Cuda& cuda, CUdevice device, MappedDevice& mapped) {
  CUuuid uuid{};
  if (cuda.deviceGetUuid != nullptr && cuda.deviceGetUuid(&uuid, device) == CUDA_SUCCESS) {
    mapped.uuid = format_uuid("GPU-", uuid.bytes);
  }
  char bus_id[32] = {};
  if (cuda.deviceGetPCIBusId != nullptr &&
      cuda.deviceGetPCIBusId(bus_id, sizeof bus_id, device) == CUDA_SUCCESS) {
    mapped.pci_bus_id = bus_id;
  }
}

// From the initialised driver: exact for every CUDA_VISIBLE_DEVICES form and device order.
bool map_from_cuda(const driver::Nvml& nvml, DeviceMap& map) {
  const driver::Cuda& cuda = driver::cuda();
  int count = 0;
  if (cuda.deviceGetCount(&count) != CUDA_SUCCESS) return false;
  for (int i = 0; i < count; ++i) {
    MappedDevice device;
    device.ordinal = i;
    CUdevice cu_device = 0;
    const bool known = cuda.deviceGet(&cu_device, i) == CUDA_SUCCESS;
    if (known) device.cu_device = cu_device;
    if (known && nvml.ready) device.handle = handle_for_cuda_device(nvml, cuda, cu_device);
    if (device.handle != nullptr) {
      if (nvml.deviceGetIndex != nullptr) nvml.deviceGetIndex(device.handle, &device.nvml_index);
      describe(nvml, device.handle, device.uuid, device.pci_bus_id);
    } else {
      // Without NVML (or a match in it) the driver still names the device.
      if (known) describe_by_driver(cuda, cu_device, device);
      if (nvml.ready) {
        support::record_diagnostic("CUDA device " + std::to_string(i) + " matches no NVML device");
      }
    }
    map.devices.push_back(std::move(device));
  }
  map.cu_device_is_ordinal = true;
  for (int i = 0; i < count; ++i) {
    map.cu_device_is_ordinal &= map.devices[static_cast<std::size_t>(i)].cu_device == i;
  }
  return true;
}

constexpr const char* kVisibleDevices = "CUDA_VISIBLE_DEVICES";
constexpr const char* kDeviceOrder = "CUDA_DEVICE_ORDER";

bool same_text(const char* a, const char* b) {
  return a == nullptr || b == nullptr ? a == b : std::strcmp(a, b) == 0;
}

// The fast check failed, but what the map was built from is as it was: something else in the
// environment moved (a new variable, the last one rewritten).
bool same_inputs(const DeviceMap& map) {
  return !map.from_cuda && driver::cuda_initialized() == map.cuda_seen &&
         same_text(map.environment.value(0), std::getenv(kVisibleDevices)) &&
         same_text(map.environment.value(1), std::getenv(kDeviceOrder));
}

std::unique_ptr<DeviceMap> build_map() {
  auto map = std::make_unique<DeviceMap>();
  // Only CUDA_VISIBLE_DEVICES is read here (the base order is the PCI order either way), but a
  // change of CUDA_DEVICE_ORDER is a change of what CUDA would enumerate, so both are watched.
  map->environment = support::EnvSnapshot::capture({kVisibleDevices, kDeviceOrder});
  map->cuda_seen = driver::cuda_initialized();
  const driver::Nvml& nvml = driver::nvml();
  if (map->cuda_seen && map_from_cuda(nvml, *map)) {
    map->from_cuda = true;
    return map;
  }
  if (nvml.ready) map_from_environment(nvml, *map);
  return map;
}

}  // namespace

std::string format_uuid(const char* prefix, const char (&bytes)[16]) {
  std::array<unsigned char, 16> copy{};
  std::memcpy(copy.data(), bytes, copy.size());
  return prefix + driver::uuid_text(copy);
}

std::atomic<const DeviceMap*> g_current_map{nullptr};

const DeviceMap& rebuilt_device_map() noexcept {
  std::lock_guard lock(build_mutex());
  const DeviceMap* current = g_current_map.load(std::memory_order_acquire);
  if (current != nullptr && still_valid(*current)) return *current;
  // Snapshots are never freed: a program that edits its environment in a loop must not pile
  // them up. Its queries take this path (two getenv) until a watched variable really changes.
  if (current != nullptr && same_inputs(*current)) return *current;
  try {
    snapshots().push_back(build_map());
    current = snapshots().back().get();
  } catch (...) {
    // Out of memory while building: keep answering from the previous map, or an empty one.
    static const DeviceMap empty;
    if (current == nullptr) current = &empty;
    return *current;
  }
  g_current_map.store(current, std::memory_order_release);
  return *current;
}

int current_ordinal() noexcept {
  const driver::Cuda& cuda = driver::cuda();
  if (!cuda.loaded || cuda.ctxGetDevice == nullptr) return 0;
  CUcontext context = nullptr;
  if (cuda.ctxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return 0;
  CUdevice device = 0;
  if (cuda.ctxGetDevice(&device) != CUDA_SUCCESS) return 0;
  // CUdevice is the ordinal on every driver seen so far; confirm rather than assume.
  CUdevice probe = -1;
  if (cuda.deviceGet(&probe, device) == CUDA_SUCCESS && probe == device) return device;
  int count = 0;
  if (cuda.deviceGetCount(&count) != CUDA_SUCCESS) return 0;
  for (int i = 0; i < count; ++i) {
    if (cuda.deviceGet(&probe, i) == CUDA_SUCCESS && probe == device) return i;
  }
  return 0;
}

int current_ordinal(const DeviceMap& map) noexcept {
  if (!map.from_cuda) return current_ordinal();
  const driver::Cuda& cuda = driver::cuda();
  // Fails where no context is current (CUDA_ERROR_INVALID_CONTEXT), where cuCtxGetCurrent would
  // have answered null: ordinal 0 either way, one call instead of two.
  CUdevice device = 0;
  if (cuda.ctxGetDevice == nullptr || cuda.ctxGetDevice(&device) != CUDA_SUCCESS) return 0;
  const auto count = static_cast<CUdevice>(map.devices.size());
  if (map.cu_device_is_ordinal) return device >= 0 && device < count ? device : 0;
  for (CUdevice i = 0; i < count; ++i) {
    if (map.devices[static_cast<std::size_t>(i)].cu_device == device) return i;
  }
  return 0;
}

}  // namespace gpumem::identity
