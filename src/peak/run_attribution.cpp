// The attributing slots `gpumem run` holds in each measured process (run_attribution.hpp).
#include "gpumem/internal/run_attribution.hpp"

#include <memory>
#include <mutex>

#include "attribution/materialize.hpp"
#include "attribution/stacks.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "peak/oom_record.hpp"

namespace gpumem::detail {
namespace {

struct Held {
  int device = 0;
  peak::Channel* channel = nullptr;
  peak::CounterSlot counter;
  peak::attribution::Slot slot;
};

std::mutex g_mutex;
// Never detached: the process keeps them to its end (events may arrive in static destructors).
std::vector<std::unique_ptr<Held>>* g_held = nullptr;

}  // namespace

bool start_run_attribution(int devices) {
  const std::lock_guard lock(g_mutex);
  if (g_held != nullptr || devices <= 0) return false;
  g_held = new std::vector<std::unique_ptr<Held>>();
  gpumem::attribution::prepare_unwinder();
  bool first = false;
  for (int device = 0; device < devices && device < peak::kMaxDevices; ++device) {
    peak::Channel* channel = peak::channel(peak::Stream::exact, device);
    if (channel == nullptr) continue;
    auto held = std::make_unique<Held>();
    held->device = device;
    held->channel = channel;
    held->slot.device = device;
    if (peak::attribution::attach(*channel, held->counter, held->slot)) first = true;
    g_held->push_back(std::move(held));
  }
  if (first) {
    peak::traced_addresses().for_each([](std::uint64_t key, const peak::Block& block) {
      if (!block.managed) peak::attribution::seed(block.device, key, block.size);
    });
  }
  return !g_held->empty();
}

std::vector<AttributionSnapshot> run_attribution_peaks() {
  const std::lock_guard lock(g_mutex);
  std::vector<AttributionSnapshot> peaks;
  if (g_held == nullptr) return peaks;
  for (const auto& held : *g_held) {
    peak::attribution::RawSnapshot raw = peak::attribution::peak_of(held->slot);
    if (raw.level <= 0 && raw.blocks.empty()) continue;
    gpumem::attribution::RawMoment moment;
    moment.what = "peak";
    moment.device = held->device;
    moment.time_ns = raw.time_ns;
    moment.level = raw.level;
    moment.blocks = std::move(raw.blocks);
    moment.device_identity = peak::snapshot_device(held->device);
    peaks.push_back(gpumem::attribution::materialize(moment));
  }
  return peaks;
}

}  // namespace gpumem::detail
