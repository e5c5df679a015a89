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

// Inline: the public to_mb is exported, and the compiler may not inline an exported function
// into another (it could be interposed), so gpu_mem_get would pay two calls and a copy of the
// reading through memory for what is three shifts.
[[gnu::always_inline]] inline GPUMemory mb_of(const GPUMemoryBytes& bytes) noexcept {
  return {unsigned_b2mb(bytes.total), unsigned_b2mb(bytes.free),
          unsigned_b2mb(device_used(bytes.total, bytes.free))};
}

}  // namespace

GPUMemory to_mb(const GPUMemoryBytes& bytes) noexcept {
  return mb_of(bytes);
}

namespace {

inline std::optional<GPUMemoryBytes> read_device(const identity::MappedDevice& device) noexcept {
  return detail::read_memory(device.handle, device.ordinal);
}

// Shared by gpu_mem_get_bytes and gpu_mem_get, inlined into each for the reason above.
[[gnu::always_inline]] inline std::optional<GPUMemoryBytes> read_id(int id) noexcept {
  const identity::MappedDevice* device = identity::find_device(id);
  if (device == nullptr) [[unlikely]]
    return std::nullopt;
  return read_device(*device);
}

}  // namespace

std::optional<GPUMemoryBytes> gpu_mem_get_bytes(int id) noexcept {
  return read_id(id);
}

namespace {

[[gnu::noinline]] GPUMemory gpu_mem_get_slow(int id) noexcept {
  if (const std::optional<GPUMemoryBytes> bytes = read_id(id)) return mb_of(*bytes);
  return {};
}

}  // namespace

GPUMemory gpu_mem_get(int id) noexcept {
  // The common case inline: a valid map, an ordinal it has (the current device included), a read
  // the fast path answers. Everything else (a map to rebuild, an unknown id, the first read, a
  // failed one) takes the whole way again, out of line, so that this keeps few registers across
  // its calls.
  const identity::DeviceMap* map = identity::g_current_map.load(std::memory_order_acquire);
  if (map != nullptr && identity::still_valid(*map)) [[likely]] {
    // The current device: 0 where CUDA is not in the process; in a CUDA program the device of
    // the thread's current context, one driver call (cuCtxGetDevice), which no cache may answer.
    int ordinal = id;
    if (id == current_device) ordinal = map->cuda_seen ? identity::current_ordinal(*map) : 0;
    if (ordinal >= 0 && static_cast<std::size_t>(ordinal) < map->devices.size()) [[likely]] {
      abi::nvmlMemory_v2_t memory;
      if (detail::read_memory_fast(map->devices[static_cast<std::size_t>(ordinal)].handle, memory))
          [[likely]] {
        return mb_of(GPUMemoryBytes{memory.total, memory.free, memory.used, memory.reserved});
      }
    }
  }
  return gpu_mem_get_slow(id);
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

// A handle read that the fast path could not answer (the first read, v1 only, a failure): out of
// line and cold, so that the fast path keeps only the handle's address across the NVML call.
[[gnu::noinline, gnu::cold]] std::optional<GPUMemoryBytes> read_handle_slow(
    const GpuHandle& handle) noexcept {
  return detail::read_memory_negotiating(static_cast<abi::nvmlDevice_t>(handle.native()),
                                         handle.device());
}

}  // namespace

// The sampler's hot path: one indirect call into NVML (see query/memory_read.hpp).
std::optional<std::uint64_t> gpu_mem_get_used_bytes_fast(const GpuHandle& handle) noexcept {
  abi::nvmlMemory_v2_t memory;
  if (detail::read_memory_fast(static_cast<abi::nvmlDevice_t>(handle.native()), memory))
      [[likely]] {
    return memory.used;
  }
  if (const std::optional<GPUMemoryBytes> read = read_handle_slow(handle)) return read->used;
  return std::nullopt;
}

std::int64_t gpu_mem_get_used_fast(const GpuHandle& handle) noexcept {
  abi::nvmlMemory_v2_t memory;
  if (detail::read_memory_fast(static_cast<abi::nvmlDevice_t>(handle.native()), memory))
      [[likely]] {
    return unsigned_b2mb(device_used(memory.total, memory.free));
  }
  if (const std::optional<GPUMemoryBytes> read = read_handle_slow(handle))
    return unsigned_b2mb(device_used(read->total, read->free));
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
