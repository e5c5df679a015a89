// Every channel of the process: one per (source stream, CUDA ordinal), created on first use and
// never destroyed (events may arrive from driver threads during exit).
#pragma once

#include "peak/channel.hpp"

namespace gpumem::peak {

enum class Stream : int {
  exact,     // CUPTI: device memory allocated and freed by this process
  managed,   // CUPTI: managed memory, kept apart (host-backed until touched, not device memory)
  reported,  // report_allocation / report_deallocation
  sampled,   // the sampler thread's NVML readings (absolute used bytes)
};
inline constexpr int kStreams = 4;
inline constexpr int kMaxDevices = 64;

Channel* make_channel_table();  // kStreams * kMaxDevices channels, never freed

// nullptr for an ordinal outside [0, kMaxDevices). Inline: every event looks its channel up, and
// a call into another file costs as much as the rest of the lookup.
[[gnu::always_inline]] inline Channel* channel(Stream stream, int device) noexcept {
  static Channel* const table = make_channel_table();
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return &table[static_cast<int>(stream) * kMaxDevices + device];
}

}  // namespace gpumem::peak
