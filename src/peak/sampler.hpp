// The sampled source: one native thread per device reading NVML's used bytes into the device's
// Stream::sampled channel, shared by every counter that needs it and running only while one does.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace gpumem::peak {

// Takes a reference on the device's sampler, starting its thread on the first. false when the
// device cannot be read (no NVML, invalid ordinal).
bool acquire_sampler(int device) noexcept;
// Drops a reference; the last one stops the thread and joins it.
void release_sampler(int device) noexcept;
// Reads the device now and feeds the channel: counters start, reset and read on a fresh sample,
// so traces shorter than one interval are right at their endpoints.
std::optional<std::int64_t> sample_now(int device) noexcept;

inline constexpr std::chrono::nanoseconds kDefaultSamplingInterval = std::chrono::microseconds(500);

}  // namespace gpumem::peak
