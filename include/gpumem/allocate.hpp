/**
 * @file gpumem/allocate.hpp
 * @brief Device memory owned through whatever CUDA driver gpumem loaded: for exercising
 * measurement and GPU tooling (ipyexperiments' `gpu_mem_allocate_mbs`), and the simulated GPU's
 * workloads. Not an allocator for production use: each block is one `cuMemAlloc`.
 *
 * @code
 * #include <gpumem/allocate.hpp>
 * #include <gpumem/diagnostics.hpp>
 * #include <gpumem/peak.hpp>
 *
 * gpumem::PeakCounter counter(0);
 * {
 *   gpumem::DeviceAllocation block = gpumem::device_allocate(256 << 20, 0);  // 256 MiB
 *   if (!block.valid()) std::fprintf(stderr, "%s\n", gpumem::last_diagnostic().c_str());
 * }  // freed here
 * const gpumem::PeakReading reading = counter.read();  // peak_bytes − start_bytes ≥ 256 MiB
 * @endcode
 */
#pragma once

#include <cstddef>
#include <cstdint>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/**
 * @brief A block of device memory, freed when destroyed (move-only, like std::unique_ptr).
 *
 * Freed in the context of the device that allocated it, leaving the calling thread's current
 * context as it was. One object must not be used from two threads at once; different objects
 * may.
 */
class DeviceAllocation {
 public:
  /// An invalid (empty) allocation.
  DeviceAllocation() = default;
  /// Takes `other`'s block; `other` becomes invalid.
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  /// Frees this block, then takes `other`'s; `other` becomes invalid.
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  /// Frees the block, if any.
  ~DeviceAllocation();

  /// Whether a block is held.
  bool valid() const noexcept { return address_ != 0; }
  /// The device address (`CUdeviceptr`); 0 when invalid.
  std::uint64_t address() const noexcept { return address_; }
  /// The block's size in bytes; 0 when invalid.
  std::size_t size() const noexcept { return size_; }
  /// The CUDA ordinal it lives on; -1 when invalid.
  int device() const noexcept { return device_; }
  /// Frees the block now; the allocation becomes invalid. Does nothing when already invalid.
  void reset() noexcept;

 private:
  friend DeviceAllocation device_allocate(std::size_t bytes, int device) noexcept;
  DeviceAllocation(std::uint64_t address, std::size_t size, int device)
      : address_(address), size_(size), device_(device) {}
  std::uint64_t address_ = 0;
  std::size_t size_ = 0;
  int device_ = -1;
};

/**
 * @brief Allocates `bytes` of device memory with `cuMemAlloc`, making the device's primary
 * context current on the calling thread (and initialising CUDA if needed); a failed allocation
 * leaves the thread's current context as it was. Thread-safe.
 * @param bytes the size in bytes
 * @param device a CUDA ordinal, or -1 (current_device) for the current one
 * @return the block; an invalid allocation on any failure (no driver, a bad device, out of memory:
 * recorded as a diagnostic)
 */
DeviceAllocation device_allocate(std::size_t bytes, int device = -1) noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
