// The peak of each device's used memory over a sliding window, sampled by one thread that reads
// every watched device at the sampling interval. Scrapes read it live: a spike is in the very next
// scrape, not one collection later. Reading it changes nothing and takes no lock and makes no
// driver call, so any number of scrapers see the same peaks and a driver that hangs never holds one
// up.
//
// The window is a ring of kBuckets + 1 slots per device: the open one, which each sample raises,
// and kBuckets closed ones. At a bucket boundary the oldest slot is emptied and opened; until the
// next sample it is empty, while the slot just closed still holds the latest one, so no sample
// ever leaves the ring early. The peak is the highest slot: the last window, up to one bucket
// more.
//
// One thread for all devices (rather than the library's sampled peak source, a thread per device)
// because the exporter's sampling is the CPU it costs an idle node: one wake-up per interval
// instead of one per device.
//
// A seam (src/peak implements it): the library measures, the exporter (`gpumem serve`) serves.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gpumem/memory.hpp"

#pragma GCC visibility push(default)

namespace gpumem::detail {

class WindowPeak {
 public:
  static constexpr int kBuckets = 10;

  // `ordinals`: the CUDA ordinals to watch, read every `interval`. Reads each once before it
  // returns, and starts sampling.
  WindowPeak(const std::vector<int>& ordinals, std::chrono::nanoseconds window,
             std::chrono::nanoseconds interval);
  ~WindowPeak();
  WindowPeak(const WindowPeak&) = delete;
  WindowPeak& operator=(const WindowPeak&) = delete;

  std::size_t size() const noexcept { return devices_.size(); }
  // Highest used bytes (NVML's used, as gpumem_memory_used_bytes) of the i-th watched device over
  // the last window (up to one bucket more), its latest sample included; nullopt when the device
  // cannot be sampled or no reading of it is in the window. Lock-free; thread-safe.
  std::optional<std::int64_t> peak(std::size_t index) const noexcept;
  // Adds a reading taken elsewhere (a collection's) to the i-th device's window, so that the
  // peak served is never below the used bytes served beside it. Thread-safe.
  void note(std::size_t index, std::int64_t used) noexcept;

 private:
  static constexpr int kSlots = kBuckets + 1;
  struct Device {
    GpuHandle handle;
    std::array<std::atomic<std::int64_t>, kSlots> slots;
    std::atomic<int> open{0};  // the slot samples raise; moved by the sampling thread only
  };
  void sample_loop();
  void sample_all() noexcept;
  void rotate_all() noexcept;

  std::chrono::nanoseconds bucket_width_;
  std::chrono::nanoseconds interval_;
  std::vector<Device> devices_;  // sized once: atomics do not move
  std::mutex mutex_;             // guards stopping_ only: the sampling thread's wait
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread sampler_;
};

}  // namespace gpumem::detail

#pragma GCC visibility pop
