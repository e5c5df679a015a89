#include "peak/channels.hpp"

namespace gpumem::peak {

Channel* make_channel_table() {
  return new Channel[kStreams * kMaxDevices];
}

}  // namespace gpumem::peak
