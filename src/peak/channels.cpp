#include "peak/channels.hpp"

namespace gpumem::peak {

Channel* channel(Stream stream, int device) noexcept {
  static Channel* const table = new Channel[kStreams * kMaxDevices];
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return &table[static_cast<int>(stream) * kMaxDevices + device];
}

}  // namespace gpumem::peak
