#include "gpumem/device.hpp"

#include <cstring>

#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/internal/process_list.hpp"
#include "identity/device_map.hpp"
#include "query/device_errors.hpp"
#include "query/memory_read.hpp"

namespace gpumem {

namespace {

// Without NVML (or no match in it) the CUDA driver still names the device, and gives its memory
// where this process has a context on it.
std::optional<DeviceInfo> describe_by_driver(const identity::MappedDevice& device) {
  if (device.uuid.empty()) return std::nullopt;
  DeviceInfo info;
  info.device = device.ordinal;
  info.uuid = device.uuid;
  info.pci_bus_id = device.pci_bus_id;
  const driver::Cuda& cuda = driver::cuda();
  abi::CUdevice handle = 0;
  char name[256] = {};
  if (cuda.deviceGetName != nullptr &&
      cuda.deviceGet(&handle, device.ordinal) == abi::CUDA_SUCCESS &&
      cuda.deviceGetName(name, sizeof name, handle) == abi::CUDA_SUCCESS) {
    info.name.assign(name, strnlen(name, sizeof name));
  }
  if (const auto memory = driver::driver_memory(device.ordinal)) {
    info.memory = {memory->total, memory->free, memory->total - memory->free, 0};
  }
  return info;
}

std::optional<DeviceInfo> describe(const identity::MappedDevice& device) {
  if (device.handle == nullptr) return describe_by_driver(device);
  const driver::Nvml& nvml = driver::nvml();
  DeviceInfo info;
  info.device = device.ordinal;
  info.nvml_index = device.nvml_index;
  info.uuid = device.uuid;
  info.pci_bus_id = device.pci_bus_id;
  char name[abi::NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (nvml.deviceGetName != nullptr) {
    const abi::nvmlReturn_t rc = nvml.deviceGetName(device.handle, name, sizeof name);
    if (rc == abi::NVML_SUCCESS) {
      info.name.assign(name, strnlen(name, sizeof name));
    } else {
      detail::note_nvml_failure(device.ordinal, "name", rc);
    }
  }
  info.memory = detail::read_memory(device.handle, device.ordinal).value_or(GPUMemoryBytes{});
  return info;
}

}  // namespace

int device_count() noexcept {
  return static_cast<int>(identity::device_map().devices.size());
}

int active_device() noexcept {
  return identity::current_ordinal();
}

std::optional<DeviceInfo> device_info(int id) noexcept {
  try {
    const identity::MappedDevice* device = identity::find_device(id);
    if (device == nullptr) return std::nullopt;
    return describe(*device);
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<DeviceInfo> devices() noexcept {
  std::vector<DeviceInfo> all;
  try {
    for (const identity::MappedDevice& device : identity::device_map().devices) {
      if (std::optional<DeviceInfo> info = describe(device)) all.push_back(std::move(*info));
    }
  } catch (...) {
    return {};
  }
  return all;
}

std::vector<std::string> mig_device_uuids(int id) noexcept {
  std::vector<std::string> uuids;
  try {
    const identity::MappedDevice* device = identity::find_device(id);
    const driver::Nvml& nvml = driver::nvml();
    unsigned most = 0;
    if (device == nullptr || device->handle == nullptr ||
        nvml.deviceGetMaxMigDeviceCount == nullptr ||
        nvml.deviceGetMigDeviceHandleByIndex == nullptr || nvml.deviceGetUUID == nullptr ||
        nvml.deviceGetMaxMigDeviceCount(device->handle, &most) != abi::NVML_SUCCESS) {
      return uuids;
    }
    for (unsigned index = 0; index < most; ++index) {
      abi::nvmlDevice_t mig = nullptr;
      char text[abi::NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (nvml.deviceGetMigDeviceHandleByIndex(device->handle, index, &mig) == abi::NVML_SUCCESS &&
          nvml.deviceGetUUID(mig, text, sizeof text) == abi::NVML_SUCCESS) {
        uuids.emplace_back(text, strnlen(text, sizeof text));
      }
    }
  } catch (...) {
    return {};
  }
  return uuids;
}

std::vector<ProcessMemory> device_processes(int id) noexcept {
  return detail::device_process_list(id).value_or(std::vector<ProcessMemory>{});
}

std::optional<std::vector<ProcessMemory>> detail::device_process_list(int id) noexcept {
  try {
    const identity::MappedDevice* device = identity::find_device(id);
    if (device == nullptr || device->handle == nullptr) return std::nullopt;
    std::vector<driver::ProcessRecord> records;
    const abi::nvmlReturn_t rc = driver::running_processes(device->handle, records);
    if (rc != abi::NVML_SUCCESS) {
      detail::note_nvml_failure(device->ordinal, "process list", rc);
      return std::nullopt;
    }
    std::vector<ProcessMemory> processes;
    for (const driver::ProcessRecord& record : records) {
      ProcessMemory process;
      process.pid = record.pid;
      if (record.used_bytes != abi::NVML_VALUE_NOT_AVAILABLE)
        process.used_bytes = record.used_bytes;
      processes.push_back(process);
    }
    return processes;
  } catch (...) {
    return std::nullopt;
  }
}

std::string driver_version() noexcept {
  try {
    const driver::Nvml& nvml = driver::nvml();
    if (!nvml.ready || nvml.systemGetDriverVersion == nullptr) return {};
    char version[abi::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (nvml.systemGetDriverVersion(version, sizeof version) != abi::NVML_SUCCESS) return {};
    return std::string(version, strnlen(version, sizeof version));
  } catch (...) {
    return {};
  }
}

}  // namespace gpumem
