/**
 * @file gpumem/memory.hpp
 * @brief Device memory queries: fastai.utils.mem's API in C++, with its names, its units and its
 * fallbacks.
 *
 * A device is named by its CUDA ordinal as the calling program sees it (`CUDA_VISIBLE_DEVICES`
 * and `CUDA_DEVICE_ORDER` respected), and the whole API calls it `device` (a parameter, a field,
 * DeviceInfo::device, GpuHandle::device()); `current_device` is the device current on the calling
 * thread. (fastai.utils.mem's Python functions call it `id`, and gpumem's Python drop-in keeps that
 * name.)
 * Figures in MB are 2^20 bytes truncated toward zero, as fastai.utils.mem's; every `_bytes` form
 * gives the bytes NVML reports.
 *
 * No query throws: without a driver, a GPU or a valid device they return fastai.utils.mem's zero
 * values, and gpumem::last_diagnostic() says why. Every function here is thread-safe. NVML is
 * loaded on the first query, never at static initialisation.
 *
 * @code
 * #include <gpumem/memory.hpp>
 *
 * const gpumem::GPUMemory mem = gpumem::gpu_mem_get(0);  // {total, free, used} in MB
 * std::printf("GPU 0: %lld MB free of %lld\n", (long long)mem.free, (long long)mem.total);
 * if (const auto bytes = gpumem::gpu_mem_get_bytes(0)) {
 *   std::printf("the driver reserves %llu bytes\n", (unsigned long long)bytes->reserved);
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/// Passed as a device: the device current on the calling thread (0 when CUDA is unused).
inline constexpr int current_device = -1;

/**
 * @brief Bytes to MB (2^20 bytes), truncated toward zero, as fastai.utils.mem's
 * `int(bytes / 2**20)`: `b2mb(-1)` is 0, `b2mb(-(1 << 20) - 1)` is -1.
 */
constexpr std::int64_t b2mb(std::int64_t bytes) noexcept {
  return bytes / (std::int64_t{1} << 20);
}

/**
 * @brief fastai.utils.mem's namedtuple: total, free and used, in that order, each in MB.
 *
 * `used` is total − free (what NVML's v1 memory info calls used, and what fastai.utils.mem
 * read): it includes the driver's own reservation, so an idle GPU reads used > 0. The
 * reservation alone is GPUMemoryBytes::reserved. All zero where the device could not be read.
 */
struct GPUMemory {
  std::int64_t total = 0;  ///< MB
  std::int64_t free = 0;   ///< MB
  std::int64_t used = 0;   ///< MB, total − free
  friend bool operator==(const GPUMemory&, const GPUMemory&) = default;
};

/**
 * @brief The byte-exact reading behind GPUMemory, as NVML reports it.
 *
 * With NVML's v2 memory info `used` leaves out the driver's reservation, reported apart as
 * `reserved` (then total = reserved + used + free); where only v1 is available `used` includes
 * it and `reserved` is 0. Either way total − free is fastai.utils.mem's used.
 */
struct GPUMemoryBytes {
  std::uint64_t total = 0;     ///< bytes
  std::uint64_t free = 0;      ///< bytes
  std::uint64_t used = 0;      ///< bytes, without the reservation where v2 is available
  std::uint64_t reserved = 0;  ///< bytes the driver keeps for itself; 0 with v1 only
  friend bool operator==(const GPUMemoryBytes&, const GPUMemoryBytes&) = default;
};

/**
 * @brief Converts a reading to MB: each field truncated on its own, used = b2mb(total − free)
 * (never negative), as fastai.utils.mem computes it.
 */
GPUMemory to_mb(const GPUMemoryBytes& bytes) noexcept;

/**
 * @brief The device's memory in MB.
 * @param device a CUDA ordinal, or current_device
 * @return {total, free, used}; {0, 0, 0} without a driver, a GPU, or for an invalid device
 */
GPUMemory gpu_mem_get(int device = current_device) noexcept;

/**
 * @brief The device's memory in bytes, as NVML reports it.
 * @param device a CUDA ordinal, or current_device
 * @return the reading; std::nullopt where gpu_mem_get would give zeros
 */
std::optional<GPUMemoryBytes> gpu_mem_get_bytes(int device = current_device) noexcept;

/// @return one entry per visible device, in CUDA ordinal order, in MB; empty without GPUs
std::vector<GPUMemory> gpu_mem_get_all() noexcept;

/// @return gpu_mem_get_all() in bytes; a device that cannot be read gives zeros in its place
std::vector<GPUMemoryBytes> gpu_mem_get_all_bytes() noexcept;

/// @return the current device's free memory in MB; 0 without a GPU
std::int64_t gpu_mem_get_free() noexcept;
/// @return the current device's used memory (total − free) in MB; 0 without a GPU
std::int64_t gpu_mem_get_used() noexcept;
/// @brief gpu_mem_get_free() after running the cache-release hooks (gpumem/cache.hpp).
std::int64_t gpu_mem_get_free_no_cache() noexcept;
/// @brief gpu_mem_get_used() after running the cache-release hooks (gpumem/cache.hpp).
std::int64_t gpu_mem_get_used_no_cache() noexcept;

/**
 * @brief A device resolved once, for repeated reads at the cost of the raw NVML call.
 *
 * A value type: copy it freely and share it between threads. A default-constructed handle, or
 * one for a device that does not exist, is invalid, and reads through it give zero or nullopt.
 *
 * @code
 * const gpumem::GpuHandle gpu = gpumem::gpu_handle(0);
 * for (int i = 0; i < 1000; ++i) samples.push_back(gpumem::gpu_mem_get_used_bytes_fast(gpu));
 * @endcode
 */
class GpuHandle {
 public:
  GpuHandle() = default;
  /// Whether the handle names an NVML device.
  bool valid() const noexcept { return native_ != nullptr; }
  /// The CUDA ordinal it was resolved from; -1 when invalid.
  int device() const noexcept { return device_; }
  /// The `nvmlDevice_t`, for calls gpumem does not wrap; nullptr when invalid.
  void* native() const noexcept { return native_; }

 private:
  friend GpuHandle gpu_handle(int device) noexcept;
  GpuHandle(int device, void* native) : device_(device), native_(native) {}
  int device_ = -1;
  void* native_ = nullptr;
};

/**
 * @brief Resolves a device once for the `_fast` reads.
 * @param device a CUDA ordinal, or current_device (resolved now, not at each read)
 * @return the handle; invalid without NVML, a GPU, or for an invalid device
 */
GpuHandle gpu_handle(int device = current_device) noexcept;

/**
 * @brief Used memory through a handle, in MB: total − free, as GPUMemory::used.
 * @return the MB; 0 for an invalid handle or a failed read (recorded as a diagnostic)
 */
std::int64_t gpu_mem_get_used_fast(const GpuHandle& handle) noexcept;

/**
 * @brief NVML's `used` bytes through a handle (GPUMemoryBytes::used: without the driver's
 * reservation where NVML has v2 memory info). One NVML call once the version is known: the
 * sampler's hot path.
 * @return the bytes; std::nullopt for an invalid handle or a failed read
 */
std::optional<std::uint64_t> gpu_mem_get_used_bytes_fast(const GpuHandle& handle) noexcept;

/**
 * @brief fastai.utils.mem's `gpu_with_max_free_mem()`: which device has the most free memory.
 *
 * fastai.utils.mem returns (id, free MB), or (None, 0) without GPUs; here `device` is
 * std::nullopt then. On ties the lowest ordinal wins.
 */
struct MaxFreeMemory {
  std::optional<int> device;  ///< CUDA ordinal; nullopt without GPUs
  std::int64_t free = 0;      ///< MB
  friend bool operator==(const MaxFreeMemory&, const MaxFreeMemory&) = default;
};
/// @return the device with the most free memory, and that memory in MB
MaxFreeMemory gpu_with_max_free_mem() noexcept;

/**
 * @brief Creates the CUDA context on the current device now, so that its cost (hundreds of MB)
 * is not charged to the first measurement: fastai.utils.mem's `preload_pytorch` for any program.
 *
 * The context is the device's primary context, made current on the calling thread and kept for
 * the life of the process, as a CUDA program's would be.
 * @return true once a context is current; false (and nothing done) without a GPU or driver
 */
bool preload() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
