#include "gpumem/internal/device_uuid.hpp"

#include <cstdio>
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

std::string uuid_text(const std::array<unsigned char, 16>& b) {
  char text[40];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return text;
}

}  // namespace gpumem::driver
