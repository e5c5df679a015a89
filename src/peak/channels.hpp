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

// nullptr for an ordinal outside [0, kMaxDevices).
Channel* channel(Stream stream, int device) noexcept;

}  // namespace gpumem::peak
