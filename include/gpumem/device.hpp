/**
 * @file gpumem/device.hpp
 * @brief Device identity: which physical GPU (NVML, nvidia-smi) a CUDA ordinal is, and which
 * processes hold memory on it.
 *
 * The mapping follows the calling program's view: `CUDA_VISIBLE_DEVICES` (indices, UUIDs, MIG
 * UUIDs) and `CUDA_DEVICE_ORDER` before CUDA is initialised in the process, the driver's own
 * UUIDs after; it is cached and rebuilt only when either can change. Nothing here initialises
 * CUDA. Every function is thread-safe and never throws; without NVML or a GPU they return empty
 * values, and gpumem::last_diagnostic() says why.
 *
 * @code
 * #include <gpumem/device.hpp>
 *
 * for (const gpumem::DeviceInfo& gpu : gpumem::devices()) {
 *   std::printf("cuda:%d = nvidia-smi %u, %s %s, %llu bytes free\n", gpu.device, gpu.nvml_index,
 *               gpu.name.c_str(), gpu.uuid.c_str(), (unsigned long long)gpu.memory.free);
 *   for (const gpumem::ProcessMemory& process : gpumem::device_processes(gpu.device)) {
 *     std::printf("  pid %u\n", process.pid);
 *   }
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/memory.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/// One visible device: how the program and nvidia-smi name it, and its memory when read.
struct DeviceInfo {
  int device = -1;          ///< CUDA ordinal, as the calling program sees it
  unsigned nvml_index = 0;  ///< NVML's index, as nvidia-smi shows it
  std::string name;         ///< "NVIDIA H200"; empty where NVML could not tell
  std::string uuid;         ///< "GPU-…" or "MIG-…"
  std::string pci_bus_id;   ///< "00000000:19:00.0"
  GPUMemoryBytes memory;    ///< bytes as gpu_mem_get_bytes() reads them; zeros where unreadable
};

/// One process holding memory on a device.
struct ProcessMemory {
  unsigned pid = 0;                         ///< as the host's NVML sees it
  std::optional<std::uint64_t> used_bytes;  ///< bytes; nullopt where the driver cannot tell
  friend bool operator==(const ProcessMemory&, const ProcessMemory&) = default;
};

/// @return the number of CUDA-visible devices; 0 without a driver or GPU
int device_count() noexcept;

/// @return the calling thread's current device (its CUDA ordinal); 0 when CUDA is unused in this
/// process
int active_device() noexcept;
/// The former name of active_device().
[[deprecated("use gpumem::active_device()")]] inline int current_device_ordinal() noexcept {
  return active_device();
}

/**
 * @brief Describes one device.
 * @param device a CUDA ordinal, or current_device
 * @return its identity and memory; std::nullopt for a device that is not visible. Without NVML the
 * CUDA driver still names a device the process has initialised.
 */
std::optional<DeviceInfo> device_info(int device = current_device) noexcept;

/// @return every visible device, in CUDA ordinal order; empty without GPUs
std::vector<DeviceInfo> devices() noexcept;

/**
 * @brief The processes holding memory on a device: compute and graphics merged by pid, read
 * robustly whatever process-record layout the driver uses.
 * @param device a CUDA ordinal, or current_device
 * @return one entry per process; empty on failure (recorded as a diagnostic) or without NVML
 */
std::vector<ProcessMemory> device_processes(int device = current_device) noexcept;

/**
 * @brief The UUIDs ("MIG-…") of the MIG devices of a GPU, as NVML lists them under it.
 * @param device a CUDA ordinal, or current_device
 * @return one UUID per MIG device; empty for a GPU without MIG, for a MIG device itself, and on
 * failure
 */
std::vector<std::string> mig_device_uuids(int device = current_device) noexcept;

/// @return the installed driver's version string ("580.65.06"); empty without NVML
std::string driver_version() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
