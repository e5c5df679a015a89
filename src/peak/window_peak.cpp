#include "gpumem/internal/window_peak.hpp"

#include <algorithm>

#include "gpumem/internal/clock.hpp"

namespace gpumem::detail {
namespace {

constexpr std::int64_t kNoReading = -1;
// As the library's sampler: below this the thread would only burn a core.
constexpr std::chrono::nanoseconds kShortestInterval = std::chrono::microseconds(10);

// Raises `slot` to `value`; the sampling thread and note() may race on the open slot.
void raise(std::atomic<std::int64_t>& slot, std::int64_t value) noexcept {
  std::int64_t seen = slot.load(std::memory_order_relaxed);
  while (value > seen && !slot.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

WindowPeak::WindowPeak(const std::vector<int>& ordinals, std::chrono::nanoseconds window,
                       std::chrono::nanoseconds interval)
    : bucket_width_(
          std::max<std::chrono::nanoseconds>(window / kBuckets, std::chrono::milliseconds(1))),
      interval_(std::max(interval, kShortestInterval)),
      devices_(ordinals.size()) {
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    // Resolved once: the exporter never changes CUDA_VISIBLE_DEVICES, so the mapping holds.
    devices_[i].handle = gpu_handle(ordinals[i]);
    for (auto& slot : devices_[i].slots) slot.store(kNoReading, std::memory_order_relaxed);
  }
  sample_all();
  sampler_ = std::thread([this] { sample_loop(); });
}

WindowPeak::~WindowPeak() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  sampler_.join();
}

void WindowPeak::sample_loop() {
  using support::SteadyClock;
  support::Cadence cadence;
  auto next_sample = cadence.advance(interval_);
  auto boundary = SteadyClock::now() + bucket_width_;
  std::unique_lock lock(mutex_);
  // One wake-up per sample, or per bucket boundary where buckets are narrower than the interval.
  while (!wake_.wait_until(lock, std::min(next_sample, boundary), [this] { return stopping_; })) {
    lock.unlock();
    const auto now = SteadyClock::now();
    if (now >= boundary) {
      rotate_all();
      boundary += bucket_width_;
      // After a stall (a suspended machine), start afresh instead of rotating in a burst.
      if (boundary <= now) boundary = now + bucket_width_;
    }
    if (now >= next_sample) {
      sample_all();
      next_sample = cadence.advance(interval_);
    }
    lock.lock();
  }
}

void WindowPeak::sample_all() noexcept {
  for (Device& device : devices_) {
    if (!device.handle.valid()) continue;
    // A failed read (a lost device) adds nothing; what the window holds ages out as usual.
    if (const auto used = gpu_mem_get_used_bytes_fast(device.handle)) {
      raise(device.slots[device.open.load(std::memory_order_relaxed)],
            static_cast<std::int64_t>(*used));
    }
  }
}

void WindowPeak::rotate_all() noexcept {
  for (Device& device : devices_) {
    const int opening = (device.open.load(std::memory_order_relaxed) + 1) % kSlots;
    // The oldest bucket leaves the window; the one just closed keeps the latest sample meanwhile.
    device.slots[opening].store(kNoReading, std::memory_order_relaxed);
    device.open.store(opening, std::memory_order_relaxed);
  }
}

std::optional<std::int64_t> WindowPeak::peak(std::size_t index) const noexcept {
  if (index >= devices_.size()) return std::nullopt;
  const Device& device = devices_[index];
  if (!device.handle.valid()) return std::nullopt;
  std::int64_t peak = kNoReading;
  for (const auto& slot : device.slots) peak = std::max(peak, slot.load(std::memory_order_relaxed));
  if (peak == kNoReading) return std::nullopt;
  return peak;
}

void WindowPeak::note(std::size_t index, std::int64_t used) noexcept {
  if (index >= devices_.size()) return;
  Device& device = devices_[index];
  // Racing a rotation, it may land in the bucket just closed: still in the window.
  raise(device.slots[device.open.load(std::memory_order_relaxed)], used);
}

}  // namespace gpumem::detail
