#include "window_peak.hpp"

#include <algorithm>

namespace gpumem::serve {
namespace {

constexpr std::int64_t kEmpty = -1;

std::unique_ptr<PeakCounter> sampled_counter(int ordinal) {
  try {
    auto counter = std::make_unique<PeakCounter>(ordinal, Source::sampled);
    if (counter->source() == Source::sampled) return counter;
  } catch (...) {
    // A device that cannot be sampled shows no window peak; the exporter keeps serving.
  }
  return nullptr;
}

}  // namespace

WindowPeak::WindowPeak(const std::vector<int>& ordinals, std::chrono::nanoseconds window)
    : bucket_width_(
          std::max<std::chrono::nanoseconds>(window / kBuckets, std::chrono::milliseconds(1))),
      devices_(ordinals.size()) {
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    Device& device = devices_[i];
    device.counters[0] = sampled_counter(ordinals[i]);
    device.counters[1] = sampled_counter(ordinals[i]);
    // Readings are of the device used (total - free); the exporter shows NVML's used, without the
    // driver's reservation (a constant of the device).
    const std::optional<GPUMemoryBytes> memory = gpu_mem_get_bytes(ordinals[i]);
    device.reserved = memory ? static_cast<std::int64_t>(memory->reserved) : 0;
    std::fill(std::begin(device.buckets), std::end(device.buckets), kEmpty);
  }
  rotator_ = std::thread([this] { rotate_loop(); });
}

WindowPeak::~WindowPeak() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  rotator_.join();
}

void WindowPeak::rotate_loop() {
  std::unique_lock lock(mutex_);
  auto next = std::chrono::steady_clock::now() + bucket_width_;
  while (!stopping_) {
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) break;
    for (Device& device : devices_) rotate(device);
    next += bucket_width_;
    // After a stall (a suspended machine), start afresh instead of rotating in a burst.
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + bucket_width_;
  }
}

void WindowPeak::rotate(Device& device) {
  if (!device.counters[0] || !device.counters[1]) return;
  const int closing = device.active;
  const int opening = 1 - closing;
  device.counters[opening]->reset();
  device.buckets[device.next_bucket] =
      device.counters[closing]->read().peak_bytes - device.reserved;
  device.next_bucket = (device.next_bucket + 1) % kBuckets;
  device.active = opening;
}

std::optional<std::int64_t> WindowPeak::peak(std::size_t index) const {
  std::lock_guard lock(mutex_);
  if (index >= devices_.size()) return std::nullopt;
  const Device& device = devices_[index];
  if (!device.counters[0] || !device.counters[1]) return std::nullopt;
  std::int64_t peak = *std::max_element(std::begin(device.buckets), std::end(device.buckets));
  // The live part: the idle counter has run since the boundary before the last one, so it covers
  // all the active one does (and a bucket the window also covers). One read, one NVML sample.
  return std::max(peak, device.counters[1 - device.active]->read().peak_bytes - device.reserved);
}

}  // namespace gpumem::serve
