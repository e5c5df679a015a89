// Device memory owned through whatever CUDA driver gpumem loaded: for exercising measurement and
// GPU tooling (ipyexperiments' gpu_mem_allocate_mbs), and the simulated GPU's workloads.
#pragma once

#include <cstddef>
#include <cstdint>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  ~DeviceAllocation();

  bool valid() const noexcept { return address_ != 0; }
  std::uint64_t address() const noexcept { return address_; }
  std::size_t size() const noexcept { return size_; }
  int device() const noexcept { return device_; }
  void reset() noexcept;  // frees now

 private:
  friend DeviceAllocation device_allocate(std::size_t bytes, int id) noexcept;
  DeviceAllocation(std::uint64_t address, std::size_t size, int device)
      : address_(address), size_(size), device_(device) {}
  std::uint64_t address_ = 0;
  std::size_t size_ = 0;
  int device_ = -1;
};

// cuMemAlloc on the device (CUDA ordinal; the current one by default), making its primary
// context current on the calling thread. An invalid allocation on any failure.
DeviceAllocation device_allocate(std::size_t bytes, int id = -1) noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
