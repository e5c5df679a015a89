// The simulated machine's description (GPUMEM_SIM_CONFIG), parsed and completed with defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumem::sim {

struct DeviceConfig {
  std::string name;
  std::string uuid;        // "GPU-…" or "MIG-…"
  std::string pci_bus_id;  // NVML form "00000000:19:00.0"
  std::uint64_t total_mib = 81920;
  std::uint64_t reserved_mib = 0;
  std::uint64_t context_mib = 0;
  // A MIG instance: the config position of its GPU. NVML then enumerates it only under that GPU
  // (nvmlDeviceGetMigDeviceHandleByIndex) and by UUID, as the real NVML does.
  int parent = -1;
};

struct Config {
  std::string driver_version = "580.95.05";
  int cuda_driver_version = 13000;
  unsigned process_record_bytes = 24;
  // The unit plain allocations (cuMemAlloc, cuMemAllocPitch) are charged in; 0: to the byte.
  std::uint64_t page_bytes = 0;
  // Added to every pid NVML reports: the simulated host's pid namespace, for a test that cannot
  // create a real one (sim choice; see docs/simulator.md). 0: NVML reports pids as they are.
  std::uint32_t nvml_pid_offset = 0;
  std::vector<int> cuda_order;  // config positions in CUDA FASTEST_FIRST order
  std::vector<DeviceConfig> devices;

  // Identifies the configuration: a state file built from a different one is recreated.
  std::uint64_t hash() const;
  // Canonical JSON text with every default filled in.
  std::string to_json() const;
};

// Two devices (H200 at NVML 0, A100 80GB at NVML 1), as the simulator contract describes.
Config default_config();

// `text` is JSON (starting with '{') or the path of a JSON file. Throws std::runtime_error with a
// readable reason on bad input.
Config parse_config(const std::string& text);

// The config GPUMEM_SIM_CONFIG names, or nullopt when it is unset. Throws like parse_config.
std::optional<Config> config_from_environment();

}  // namespace gpumem::sim
