#include <optional>

#include "gpumem/device.hpp"
#include "gpumem/peak.hpp"
#include "peak/channels.hpp"
#include "peak/exact_source.hpp"
#include "peak/sampler.hpp"

namespace gpumem {
namespace {

int resolve_device(int device) noexcept {
  return device == current_device ? current_device_ordinal() : device;
}

bool device_exists(int device) noexcept {
  return device >= 0 && device < peak::kMaxDevices && device < device_count();
}

// Where exact and reported levels are anchored: the device's used bytes by NVML (0 without it).
std::int64_t used_bytes(int device) noexcept {
  const auto memory = gpu_mem_get_bytes(device);
  return memory ? static_cast<std::int64_t>(memory->used) : 0;
}

}  // namespace

std::string_view to_string(Source source) noexcept {
  switch (source) {
    case Source::automatic:
      return "automatic";
    case Source::exact:
      return "exact";
    case Source::reported:
      return "reported";
    case Source::sampled:
      return "sampled";
    case Source::none:
      return "none";
  }
  return "unknown";
}

struct PeakCounter::State {
  int device = 0;
  Source source = Source::none;
  peak::Channel* channel = nullptr;
  peak::CounterSlot slot;
  std::int64_t anchor = 0;  // used bytes at start, for the relative (exact, reported) levels

  State(int requested_device, Source requested) : device(resolve_device(requested_device)) {
    source = choose(requested);
    switch (source) {
      case Source::exact:
        channel = peak::channel(peak::Stream::exact, device);
        break;
      case Source::reported:
        channel = peak::channel(peak::Stream::reported, device);
        break;
      case Source::sampled:
        channel = peak::channel(peak::Stream::sampled, device);
        break;
      default:
        break;
    }
    if (channel == nullptr) {
      release_source();
      source = Source::none;
      return;
    }
    rebaseline();
    channel->attach(slot);
  }

  ~State() {
    if (channel != nullptr) channel->detach(slot);
    release_source();
  }

  State(const State&) = delete;
  State& operator=(const State&) = delete;

  Source choose(Source requested) noexcept {
    if (requested == Source::none) return Source::none;
    // A custom allocator may report for any ordinal, GPU or not.
    if (requested == Source::reported) {
      return device >= 0 && device < peak::kMaxDevices ? Source::reported : Source::none;
    }
    if (!device_exists(device)) return Source::none;
    if (requested != Source::sampled && peak::acquire_exact()) return Source::exact;
    if (peak::acquire_sampler(device)) return Source::sampled;
    return Source::none;
  }

  void release_source() noexcept {
    if (source == Source::exact) peak::release_exact();
    if (source == Source::sampled) peak::release_sampler(device);
  }

  // Called before the channel's checkpoint, so the anchor and the level agree.
  void rebaseline() noexcept {
    if (source == Source::sampled) {
      peak::sample_now(device);
    } else {
      anchor = used_bytes(device);
    }
  }

  void reset() {
    if (channel == nullptr) return;
    rebaseline();
    channel->restart(slot);
  }

  PeakReading read() {
    PeakReading reading;
    reading.device = device;
    reading.source = source;
    if (channel == nullptr) return reading;
    if (source == Source::sampled) peak::sample_now(device);
    const peak::LevelReading levels = channel->read(slot);
    if (source == Source::sampled) {
      reading.start_bytes = levels.start;
      reading.current_bytes = levels.current;
      reading.peak_bytes = levels.peak;
    } else {
      reading.start_bytes = anchor;
      reading.current_bytes = anchor + (levels.current - levels.start);
      reading.peak_bytes = anchor + (levels.peak - levels.start);
    }
    return reading;
  }
};

PeakCounter::PeakCounter(int device, Source source)
    : state_(std::make_unique<State>(device, source)) {}
PeakCounter::~PeakCounter() = default;
PeakCounter::PeakCounter(PeakCounter&&) noexcept = default;
PeakCounter& PeakCounter::operator=(PeakCounter&&) noexcept = default;

void PeakCounter::reset() {
  if (state_) state_->reset();
}

PeakReading PeakCounter::read() const {
  return state_ ? state_->read() : PeakReading{};
}

Source PeakCounter::source() const noexcept {
  return state_ ? state_->source : Source::none;
}

int PeakCounter::device() const noexcept {
  return state_ ? state_->device : 0;
}

void report_allocation(int device, std::size_t bytes) noexcept {
  if (peak::Channel* target = peak::channel(peak::Stream::reported, resolve_device(device))) {
    target->add(static_cast<std::int64_t>(bytes));
  }
}

void report_deallocation(int device, std::size_t bytes) noexcept {
  if (peak::Channel* target = peak::channel(peak::Stream::reported, resolve_device(device))) {
    target->add(-static_cast<std::int64_t>(bytes));
  }
}

std::string exact_source_status() {
  return peak::exact_status();
}

}  // namespace gpumem
