// The peak of each device's used memory over a sliding window, fed by the library's sampled
// peak source. Reading it changes nothing, so any number of scrapers see the same peaks.
//
// The window is a ring of buckets. Each device has two sampled counters that take turns: at a
// bucket boundary the idle one is reset (it starts the new bucket) before the busy one is read
// and closed, so consecutive buckets overlap by an instant instead of leaving a gap a spike
// could fall into.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gpumem/peak.hpp"

namespace gpumem::serve {

class WindowPeak {
 public:
  static constexpr int kBuckets = 10;

  // `ordinals`: the CUDA ordinals to watch. Starts sampling at once.
  WindowPeak(const std::vector<int>& ordinals, std::chrono::nanoseconds window);
  ~WindowPeak();
  WindowPeak(const WindowPeak&) = delete;
  WindowPeak& operator=(const WindowPeak&) = delete;

  // Highest used bytes of the i-th watched device over the last window (up to one bucket more);
  // nullopt when the device cannot be sampled.
  std::optional<std::int64_t> peak(std::size_t index) const;

 private:
  struct Device {
    std::unique_ptr<PeakCounter> counters[2];
    int active = 0;
    std::int64_t buckets[kBuckets];
    int next_bucket = 0;
    std::int64_t reserved = 0;  // the driver's reservation, outside NVML's used
  };
  void rotate_loop();
  void rotate(Device& device);

  std::chrono::nanoseconds bucket_width_;
  std::vector<Device> devices_;
  mutable std::mutex mutex_;  // guards the buckets and which counter is active
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread rotator_;
};

}  // namespace gpumem::serve
