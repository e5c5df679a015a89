#include "gpumem/memory.hpp"

#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/cache.hpp"
#include "identity/device_map.hpp"
#include "query/device_errors.hpp"
#include "query/memory_read.hpp"
#include "query/primary_context.hpp"

namespace gpumem {

// identity, below this room and the public API, names the calling thread's device the same way.
static_assert(current_device == identity::kCurrentDevice);

namespace {

// b2mb for a byte count that cannot be negative: the same truncation, as a shift.
constexpr std::int64_t unsigned_b2mb(std::uint64_t bytes) noexcept {
  return static_cast<std::int64_t>(bytes >> 20);
}

// fastai.utils.mem's used: total − free (NVML v1's used), never negative.
constexpr std::uint64_t device_used(std::uint64_t total, std::uint64_t free) noexcept {
  return total > free ? total - free : 0;
}

}  // namespace

GPUMemory to_mb(const GPUMemoryBytes& bytes) noexcept {
  return {unsigned_b2mb(bytes.total), unsigned_b2mb(bytes.free),
          unsigned_b2mb(device_used(bytes.total, bytes.free))};
}

namespace {

inline std::optional<GPUMemoryBytes> read_device(const identity::MappedDevice& device) noexcept {
  return detail::read_memory(device.handle, device.ordinal);
}

}  // namespace

std::optional<GPUMemoryBytes> gpu_mem_get_bytes(int id) noexcept {
  const identity::MappedDevice* device = identity::find_device(id);
  if (device == nullptr) return std::nullopt;
  return read_device(*device);
}

GPUMemory gpu_mem_get(int id) noexcept {
  const std::optional<GPUMemoryBytes> bytes = gpu_mem_get_bytes(id);
  return bytes ? to_mb(*bytes) : GPUMemory{};
}

std::vector<GPUMemoryBytes> gpu_mem_get_all_bytes() noexcept {
  std::vector<GPUMemoryBytes> all;
  try {
    for (const identity::MappedDevice& device : identity::device_map().devices) {
      all.push_back(read_device(device).value_or(GPUMemoryBytes{}));
    }
  } catch (...) {
    return {};
  }
  return all;
}

std::vector<GPUMemory> gpu_mem_get_all() noexcept {
  std::vector<GPUMemory> all;
  try {
    for (const GPUMemoryBytes& bytes : gpu_mem_get_all_bytes()) all.push_back(to_mb(bytes));
  } catch (...) {
    return {};
  }
  return all;
}

std::int64_t gpu_mem_get_free() noexcept {
  return gpu_mem_get().free;
}

std::int64_t gpu_mem_get_used() noexcept {
  return gpu_mem_get().used;
}

std::int64_t gpu_mem_get_free_no_cache() noexcept {
  release_caches();
  return gpu_mem_get().free;
}

std::int64_t gpu_mem_get_used_no_cache() noexcept {
  release_caches();
  return gpu_mem_get().used;
}

GpuHandle gpu_handle(int id) noexcept {
  const identity::MappedDevice* device = identity::find_device(id);
  if (device == nullptr || device->handle == nullptr) return {};
  return GpuHandle(device->ordinal, device->handle);
}

namespace {

// The sampler's hot path: one indirect call into NVML (see query/memory_read.hpp).
[[gnu::always_inline]] inline std::optional<GPUMemoryBytes> read_handle(
    const GpuHandle& handle) noexcept {
  return detail::read_memory(static_cast<abi::nvmlDevice_t>(handle.native()), handle.device());
}

}  // namespace

std::optional<std::uint64_t> gpu_mem_get_used_bytes_fast(const GpuHandle& handle) noexcept {
  if (const std::optional<GPUMemoryBytes> memory = read_handle(handle)) [[likely]]
    return memory->used;
  return std::nullopt;
}

std::int64_t gpu_mem_get_used_fast(const GpuHandle& handle) noexcept {
  if (const std::optional<GPUMemoryBytes> memory = read_handle(handle)) [[likely]]
    return unsigned_b2mb(device_used(memory->total, memory->free));
  return 0;
}

MaxFreeMemory gpu_with_max_free_mem() noexcept {
  const std::vector<GPUMemory> all = gpu_mem_get_all();
  MaxFreeMemory best;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!best.device || all[i].free > best.free) {  // strictly greater: the first maximum wins
      best.device = static_cast<int>(i);
      best.free = all[i].free;
    }
  }
  return best;
}

bool preload() noexcept {
  if (driver::cuda_init() != abi::CUDA_SUCCESS) return false;
  const driver::Cuda& cuda = driver::cuda();
  if (cuda.devicePrimaryCtxRetain == nullptr || cuda.ctxSetCurrent == nullptr) return false;
  abi::CUcontext context = nullptr;
  if (cuda.ctxGetCurrent(&context) == abi::CUDA_SUCCESS && context != nullptr) return true;
  const int ordinal = identity::current_ordinal();
  // The retained context is kept for the life of the process, as a CUDA program's would be.
  abi::CUresult rc = detail::primary_context(ordinal, context);
  if (rc == abi::CUDA_SUCCESS) rc = cuda.ctxSetCurrent(context);
  if (rc != abi::CUDA_SUCCESS) {
    detail::note_cuda_failure(ordinal, "creating the CUDA context", rc);
    return false;
  }
  return true;
}

}  // namespace gpumem
