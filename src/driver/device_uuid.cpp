#include "gpumem/internal/device_uuid.hpp"

#include <cstring>

#include "driver/cuda.hpp"

namespace gpumem::driver {

std::optional<std::array<unsigned char, 16>> device_uuid(int ordinal) noexcept {
  const Cuda& driver = cuda();
  abi::CUdevice device = 0;
  abi::CUuuid uuid{};
  if (driver.deviceGet == nullptr || driver.deviceGetUuid == nullptr ||
      driver.deviceGet(&device, ordinal) != abi::CUDA_SUCCESS ||
      driver.deviceGetUuid(&uuid, device) != abi::CUDA_SUCCESS)
    return std::nullopt;
  std::array<unsigned char, 16> bytes{};
  static_assert(sizeof uuid.bytes == bytes.size());
  std::memcpy(bytes.data(), uuid.bytes, bytes.size());
  return bytes;
}

}  // namespace gpumem::driver
