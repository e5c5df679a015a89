#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>

#include "attribution/materialize.hpp"
#include "attribution/stacks.hpp"
#include "driver/cuda.hpp"
#include "driver/nvml.hpp"
#include "gpumem/device.hpp"
#include "gpumem/internal/exact_source.hpp"
#include "gpumem/peak.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/footprint.hpp"
#include "peak/oom_record.hpp"
#include "peak/sampler.hpp"

namespace gpumem {
namespace {

int resolve_device(int device) noexcept {
  return device == current_device ? active_device() : device;
}

// Without NVML and before CUDA starts no device is known yet; the exact source can still count
// from the first CUDA call on, so any ordinal in range is taken then.
bool device_exists(int device) noexcept {
  if (device < 0 || device >= peak::kMaxDevices) return false;
  if (device < device_count()) return true;
  return !driver::nvml().ready && !driver::cuda_initialized();
}

// The device's used memory, total - free: by NVML, else by the driver (only where this process
// has a context on it), else unknown.
std::optional<std::int64_t> device_used(int device) noexcept {
  if (const auto memory = gpu_mem_get_bytes(device)) {
    return static_cast<std::int64_t>(memory->total - memory->free);
  }
  if (const auto memory = driver::driver_memory(device)) {
    return static_cast<std::int64_t>(memory->total - memory->free);
  }
  return std::nullopt;
}

// NVML's v2 `used`, which the sampler reads on its fast path, leaves out the driver's reservation;
// total - free includes it.
std::int64_t reserved_bytes(int device) noexcept {
  const auto memory = gpu_mem_get_bytes(device);
  return memory ? static_cast<std::int64_t>(memory->total - memory->free - memory->used) : 0;
}

// GPUMEM_ATTRIBUTE=1 (or true, on, yes): every exact counter of the process attributes.
bool attribution_from_environment() noexcept {
  static const bool enabled = [] {
    const char* value = std::getenv("GPUMEM_ATTRIBUTE");
    if (value == nullptr) return false;
    const std::string_view text(value);
    return text == "1" || text == "true" || text == "on" || text == "yes";
  }();
  return enabled;
}

// The blocks already live when attribution begins: named without a stack.
void seed_attribution() {
  peak::traced_addresses().for_each([](std::uint64_t key, const peak::Block& block) {
    if (!block.managed) peak::attribution::seed(block.device, key, block.size);
  });
}

}  // namespace

struct PeakCounter::State {
  int device = 0;
  Source source = Source::none;
  peak::Channel* channel = nullptr;
  peak::CounterSlot slot;
  std::int64_t offset = 0;  // sampled: from NVML's v2 used (the channel's level) to total - free
  // The device-used figures: reads of one counter may come from several threads.
  std::mutex device_used_mutex;
  bool device_used_known = false;
  std::int64_t device_used_start = 0;
  std::int64_t device_used_peak = 0;  // the highest device reading in the window
  bool attributing = false;
  peak::attribution::Slot attribution_slot;

  State(int requested_device, Source requested, Attribution attribution)
      : device(resolve_device(requested_device)) {
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
    attributing = source == Source::exact &&
                  (attribution == Attribution::on || attribution_from_environment());
    if (!attributing) {
      channel->attach(slot);
      return;
    }
    gpumem::attribution::prepare_unwinder();
    attribution_slot.device = device;
    if (peak::attribution::attach(*channel, slot, attribution_slot)) seed_attribution();
  }

  ~State() {
    if (channel != nullptr && attributing) {
      peak::attribution::detach(*channel, slot, attribution_slot);
    } else if (channel != nullptr) {
      channel->detach(slot);
    }
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

  Quantity quantity() const noexcept {
    switch (source) {
      case Source::exact:
        return Quantity::process_footprint;
      case Source::sampled:
        return Quantity::device_used;
      case Source::reported:
        return Quantity::reported;
      default:
        return Quantity::none;
    }
  }

  // Brings what the driver reports into the level: called before a checkpoint or a read.
  void refresh() noexcept {
    if (source == Source::exact) peak::footprint::refresh_for_reading(device);
    if (source == Source::sampled) peak::sample_now(device);
  }

  // Called before the channel's checkpoint, so the device reading and the level agree.
  void rebaseline() noexcept {
    refresh();
    if (source == Source::sampled) offset = reserved_bytes(device);
    const std::optional<std::int64_t> used = device_used(device);
    const std::lock_guard lock(device_used_mutex);
    device_used_known = used.has_value();
    device_used_start = used.value_or(0);
    device_used_peak = device_used_start;
  }

  void reset() {
    if (channel == nullptr) return;
    rebaseline();
    if (attributing) return peak::attribution::restart(*channel, slot, attribution_slot);
    channel->restart(slot);
  }

  std::optional<AttributionSnapshot> peak_snapshot() {
    if (!attributing) return std::nullopt;
    refresh();  // as a read: what the driver holds is in the level first
    peak::attribution::RawSnapshot raw = peak::attribution::peak_of(attribution_slot);
    attribution::RawMoment moment;
    moment.what = "peak";
    moment.device = device;
    moment.time_ns = raw.time_ns;
    moment.level = raw.level;
    moment.blocks = std::move(raw.blocks);
    moment.device_identity = peak::snapshot_device(device);
    return attribution::materialize(moment);
  }

  PeakReading read() {
    PeakReading reading;
    reading.device = device;
    reading.source = source;
    reading.quantity = quantity();
    if (channel == nullptr) return reading;
    refresh();
    const peak::LevelReading levels = channel->read(slot);
    reading.start_bytes = levels.start + offset;
    reading.current_bytes = levels.current + offset;
    reading.peak_bytes = levels.peak + offset;
    if (source == Source::exact) reading.covers = peak::footprint::coverage(device);
    if (source == Source::sampled) reading.covers = coverage::footprint | coverage::other_processes;
    const std::optional<std::int64_t> now = device_used(device);
    const std::lock_guard lock(device_used_mutex);
    if (!device_used_known) {
      // Unreadable at the start (no NVML, and no context yet to ask the driver in): the start is
      // the first reading less what this counter saw rise since.
      if (!now) return reading;
      device_used_start = *now - (levels.current - levels.start);
      device_used_peak = device_used_start;
      device_used_known = true;
    }
    if (now) device_used_peak = std::max(device_used_peak, *now);
    reading.device_used_start_bytes = device_used_start;
    reading.device_used_current_bytes = now.value_or(device_used_start);
    // What this counter saw rise on top of the start is on the device too.
    reading.device_used_peak_bytes =
        std::max(device_used_peak, device_used_start + (levels.peak - levels.start));
    if (source == Source::sampled) {
      reading.device_used_peak_bytes = std::max(reading.device_used_peak_bytes, reading.peak_bytes);
    }
    return reading;
  }
};

PeakCounter::PeakCounter(int device, Source source)
    : state_(std::make_unique<State>(device, source, Attribution::off)) {}
PeakCounter::PeakCounter(int device, Source source, Attribution attribution)
    : state_(std::make_unique<State>(device, source, attribution)) {}
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

bool PeakCounter::attributing() const noexcept {
  return state_ && state_->attributing;
}

std::optional<AttributionSnapshot> PeakCounter::peak_snapshot() const {
  return state_ ? state_->peak_snapshot() : std::nullopt;
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

std::string describe_coverage(std::uint32_t covers) {
  static constexpr std::pair<std::uint32_t, const char*> kParts[] = {
      {coverage::allocations, "allocations"},
      {coverage::vmm, "VMM"},
      {coverage::pools, "pools"},
      {coverage::graphs, "graphs"},
      {coverage::context, "context and modules"},
      {coverage::other_processes, "other processes"},
  };
  std::string text;
  for (const auto& [bit, name] : kParts) {
    if ((covers & bit) == 0) continue;
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text.empty() ? "nothing" : text;
}

std::string describe(const PeakReading& reading) {
  std::string text{to_string(reading.quantity)};
  switch (reading.source) {
    case Source::exact:
      text += ", exact (CUDA events";
      text += (reading.covers & coverage::context) != 0 ? " and NVML's per-process figure)" : ")";
      break;
    case Source::sampled:
      text +=
          ", sampled from NVML every " + std::to_string(sampling_interval().count() / 1000) + " us";
      break;
    case Source::reported:
      return text + " (report_allocation)";
    default:
      return text;
  }
  text += ": " + describe_coverage(reading.covers);
  if (reading.source == Source::sampled) {
    text += "; may miss spikes shorter than the interval";
  } else if ((reading.covers & coverage::context) == 0) {
    text += "; misses the CUDA context and modules (no per-process figure from NVML)";
  }
  return text;
}

std::string exact_source_status() {
  return peak::exact_status();
}

}  // namespace gpumem
