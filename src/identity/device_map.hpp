// CUDA ordinal → NVML device, cached. With CUDA initialised in the process the mapping comes from
// the driver itself (UUIDs, then PCI bus ids); otherwise from CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER (see visible_devices.hpp), never by initialising CUDA. The cache is rebuilt
// only when the answer can change: CUDA became initialised, or either variable's text changed.
#pragma once

#include <string>
#include <vector>

#include <atomic>

#include "driver/abi/nvml.hpp"
#include "driver/cuda.hpp"
#include "support/env_snapshot.hpp"

namespace gpumem::identity {

// The id that names the calling thread's device: the public gpumem::current_device, which query
// (above this room) checks is the same value.
inline constexpr int kCurrentDevice = -1;

struct MappedDevice {
  int ordinal = -1;
  abi::nvmlDevice_t handle = nullptr;  // null where no NVML device could be matched
  unsigned nvml_index = 0;
  std::string uuid;
  std::string pci_bus_id;
  int cu_device = -1;  // the driver's CUdevice for the ordinal, in maps built from the driver
};

struct DeviceMap {
  bool from_cuda = false;             // derived from the initialised CUDA driver (exact)
  bool cuda_seen = false;             // CUDA was initialised when this map was built
  support::EnvSnapshot environment;   // CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER when it was built
  std::vector<MappedDevice> devices;  // index = CUDA ordinal
  bool cu_device_is_ordinal = false;  // from_cuda, and every ordinal's CUdevice is the ordinal
};

// The current mapping. The reference stays valid for the life of the process (snapshots are
// never freed, so readers on other threads need no lock).
// Inline: every query starts here, and the check must cost next to nothing.
extern std::atomic<const DeviceMap*> g_current_map;
const DeviceMap& rebuilt_device_map() noexcept;
inline bool still_valid(const DeviceMap& map) noexcept {
  if (map.from_cuda) return true;  // CUDA read the variables at cuInit; they cannot change it now
  return map.environment.unchanged() && driver::cuda_initialized() == map.cuda_seen;
}
inline const DeviceMap& device_map() noexcept {
  const DeviceMap* map = g_current_map.load(std::memory_order_acquire);
  if (map != nullptr && still_valid(*map)) [[likely]] {
    return *map;
  }
  return rebuilt_device_map();
}

// The calling thread's current CUDA ordinal: the device of its current context, 0 when CUDA is
// unused or no context is current.
int current_ordinal() noexcept;
// The same, by a map: where it was built from the driver, one driver call (the current context's
// device) and the ordinal of that CUdevice from the map, which cannot change once CUDA is
// initialised; current_ordinal() otherwise.
int current_ordinal(const DeviceMap& map) noexcept;

// The device for a CUDA ordinal, kCurrentDevice meaning the calling thread's; nullptr
// for an id that names no visible device.
inline const MappedDevice* find_device(int id) noexcept {
  const DeviceMap& map = device_map();
  // Without CUDA in the process (the map just confirmed it) no context can be current.
  if (id == kCurrentDevice) id = map.cuda_seen ? current_ordinal(map) : 0;
  if (id < 0 || static_cast<std::size_t>(id) >= map.devices.size()) return nullptr;
  return &map.devices[static_cast<std::size_t>(id)];
}

// "GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01" from CUDA's 16 bytes (prefix given): the prefix
// and the driver room's uuid_text, the one way gpumem writes a UUID.
std::string format_uuid(const char* prefix, const char (&bytes)[16]);

}  // namespace gpumem::identity
