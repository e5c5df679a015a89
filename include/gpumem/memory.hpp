// Device memory queries: fastai.utils.mem's API in C++, with its names and fallbacks.
// Ids are CUDA ordinals, as the calling program sees them (CUDA_VISIBLE_DEVICES respected).
// No query throws: without a driver, a GPU or a valid id they return fastai.utils.mem's zero
// values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

// Passed as a device id: the device current on the calling thread (0 when CUDA is unused).
inline constexpr int current_device = -1;

// MB = 2^20 bytes, truncated toward zero, as fastai.utils.mem's int(bytes / 2**20).
constexpr std::int64_t b2mb(std::int64_t bytes) noexcept {
  return bytes / (std::int64_t{1} << 20);
}

// fastai.utils.mem's namedtuple: field order total, free, used; each in MB. `used` is total − free
// (what NVML's v1 memory info calls used, and what fastai.utils.mem read): it includes the
// driver's own reservation, so an idle GPU reads used > 0. The reservation alone is
// GPUMemoryBytes::reserved.
struct GPUMemory {
  std::int64_t total = 0;
  std::int64_t free = 0;
  std::int64_t used = 0;
  friend bool operator==(const GPUMemory&, const GPUMemory&) = default;
};

// The byte-exact reading behind GPUMemory, as NVML reports it. `reserved` is the driver's own
// reservation, which NVML's v2 memory info reports apart from `used` (then total = reserved + used
// + free); where only v1 is available, `used` includes it and `reserved` is 0.
struct GPUMemoryBytes {
  std::uint64_t total = 0;
  std::uint64_t free = 0;
  std::uint64_t used = 0;
  std::uint64_t reserved = 0;
  friend bool operator==(const GPUMemoryBytes&, const GPUMemoryBytes&) = default;
};

// Each field truncated to MB separately; used = b2mb(total − free), as fastai.utils.mem's.
GPUMemory to_mb(const GPUMemoryBytes& bytes) noexcept;

// {0,0,0} without a driver, a GPU, or for an invalid id.
GPUMemory gpu_mem_get(int id = current_device) noexcept;
// std::nullopt where gpu_mem_get would give zeros.
std::optional<GPUMemoryBytes> gpu_mem_get_bytes(int id = current_device) noexcept;
// One entry per visible device in CUDA ordinal order; empty without GPUs.
std::vector<GPUMemory> gpu_mem_get_all() noexcept;
// The same in bytes; a device that cannot be read gives zeros.
std::vector<GPUMemoryBytes> gpu_mem_get_all_bytes() noexcept;

std::int64_t gpu_mem_get_free() noexcept;
std::int64_t gpu_mem_get_used() noexcept;
// Run the registered cache-release hooks (see cache.hpp) first, then read.
std::int64_t gpu_mem_get_free_no_cache() noexcept;
std::int64_t gpu_mem_get_used_no_cache() noexcept;

// A device resolved once, for repeated reads at the cost of the raw NVML call.
class GpuHandle {
 public:
  GpuHandle() = default;
  bool valid() const noexcept { return native_ != nullptr; }
  int ordinal() const noexcept { return ordinal_; }
  void* native() const noexcept { return native_; }  // the nvmlDevice_t

 private:
  friend GpuHandle gpu_handle(int id) noexcept;
  GpuHandle(int ordinal, void* native) : ordinal_(ordinal), native_(native) {}
  int ordinal_ = -1;
  void* native_ = nullptr;
};
GpuHandle gpu_handle(int id = current_device) noexcept;
// Used MB (total − free, as GPUMemory::used) through a handle; 0 for an invalid handle or a
// failed read.
std::int64_t gpu_mem_get_used_fast(const GpuHandle& handle) noexcept;
// NVML's `used` bytes through a handle (GPUMemoryBytes::used: without the driver's reservation
// where NVML has v2 memory info); nullopt on failure. The sampler's hot path.
std::optional<std::uint64_t> gpu_mem_get_used_bytes_fast(const GpuHandle& handle) noexcept;

// fastai.utils.mem returns (id, free MB), or (None, 0) without GPUs: here id is std::nullopt then.
struct MaxFreeMemory {
  std::optional<int> id;
  std::int64_t free = 0;
  friend bool operator==(const MaxFreeMemory&, const MaxFreeMemory&) = default;
};
MaxFreeMemory gpu_with_max_free_mem() noexcept;

// Create the CUDA context on the current device now, so its cost (hundreds of MB) is not
// charged to the first measurement: fastai.utils.mem's preload_pytorch for any program. false (and
// nothing done) without a GPU.
bool preload() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
