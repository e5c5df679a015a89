#include "gpumem/memory.hpp"

#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/cache.hpp"
#include "identity/device_map.hpp"
#include "query/device_errors.hpp"
#include "query/primary_context.hpp"

namespace gpumem {

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

[[gnu::noinline]] std::optional<GPUMemoryBytes> read_device_slow(
    const identity::MappedDevice& device) noexcept {
  if (device.handle == nullptr) return std::nullopt;
  driver::MemoryReading reading;
  const abi::nvmlReturn_t rc = driver::memory_info(device.handle, reading);
  if (rc != abi::NVML_SUCCESS) {
    detail::note_nvml_failure(device.ordinal, "memory info", rc);
    return std::nullopt;
  }
  return GPUMemoryBytes{reading.total, reading.free, reading.used, reading.reserved};
}

// One driver call once _v2 memory info is known to work; the negotiating path otherwise.
inline std::optional<GPUMemoryBytes> read_device(const identity::MappedDevice& device) noexcept {
  if (const auto read = driver::g_working_memory_v2.load(std::memory_order_acquire)) [[likely]] {
    if (device.handle != nullptr) [[likely]] {
      abi::nvmlMemory_v2_t memory;
      memory.version = abi::kNvmlMemory_v2;
      if (read(device.handle, &memory) == abi::NVML_SUCCESS) [[likely]] {
        return GPUMemoryBytes{memory.total, memory.free, memory.used, memory.reserved};
      }
    }
  }
  return read_device_slow(device);
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

// Where the fast path below did not answer: before the first read, on an NVML with v1 memory
// info only, and on errors.
[[gnu::noinline]] std::optional<std::uint64_t> used_bytes_slow(const GpuHandle& handle) noexcept {
  if (!handle.valid()) return std::nullopt;
  driver::MemoryReading reading;
  const abi::nvmlReturn_t rc =
      driver::memory_info(static_cast<abi::nvmlDevice_t>(handle.native()), reading);
  if (rc != abi::NVML_SUCCESS) {
    detail::note_nvml_failure(handle.ordinal(), "memory info", rc);
    return std::nullopt;
  }
  return reading.used;
}

[[gnu::noinline]] std::int64_t used_mb_slow(const GpuHandle& handle) noexcept {
  if (!handle.valid()) return 0;
  driver::MemoryReading reading;
  const abi::nvmlReturn_t rc =
      driver::memory_info(static_cast<abi::nvmlDevice_t>(handle.native()), reading);
  if (rc != abi::NVML_SUCCESS) {
    detail::note_nvml_failure(handle.ordinal(), "memory info", rc);
    return 0;
  }
  return unsigned_b2mb(device_used(reading.total, reading.free));
}

// The sampler's hot path: one indirect call into NVML. Everything else (the first read, a v1-only
// NVML, errors) goes to the out-of-line path, so the fast one needs no saved registers.
[[gnu::always_inline]] inline bool read_v2(const GpuHandle& handle,
                                           abi::nvmlMemory_v2_t& memory) noexcept {
  const auto read = driver::g_working_memory_v2.load(std::memory_order_acquire);
  if (read == nullptr || !handle.valid()) [[unlikely]]
    return false;
  memory.version = abi::kNvmlMemory_v2;
  return read(static_cast<abi::nvmlDevice_t>(handle.native()), &memory) == abi::NVML_SUCCESS;
}

}  // namespace

std::optional<std::uint64_t> gpu_mem_get_used_bytes_fast(const GpuHandle& handle) noexcept {
  abi::nvmlMemory_v2_t memory;
  if (read_v2(handle, memory)) [[likely]]
    return memory.used;
  return used_bytes_slow(handle);
}

std::int64_t gpu_mem_get_used_fast(const GpuHandle& handle) noexcept {
  abi::nvmlMemory_v2_t memory;
  if (read_v2(handle, memory)) [[likely]]
    return unsigned_b2mb(device_used(memory.total, memory.free));
  return used_mb_slow(handle);
}

MaxFreeMemory gpu_with_max_free_mem() noexcept {
  const std::vector<GPUMemory> all = gpu_mem_get_all();
  MaxFreeMemory best;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!best.id || all[i].free > best.free) {  // strictly greater: the first maximum wins
      best.id = static_cast<int>(i);
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
