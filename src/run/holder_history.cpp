#include "run/holder_history.hpp"

#include <algorithm>

namespace gpumem::run {
namespace {

// NVML lists processes in no promised order: compare the lists as sets.
std::vector<ProcessMemory> sorted(std::vector<ProcessMemory> listed) {
  std::sort(listed.begin(), listed.end(),
            [](const ProcessMemory& a, const ProcessMemory& b) { return a.pid < b.pid; });
  return listed;
}

}  // namespace

HolderHistory::HolderHistory(std::size_t max_readings)
    : max_readings_(std::max<std::size_t>(max_readings, 2)) {}

void HolderHistory::add(int device, std::int64_t time_ns,
                        const std::vector<ProcessMemory>& listed) {
  std::vector<HolderReading>& readings = devices_[device];
  std::vector<ProcessMemory> list = sorted(listed);
  if (!readings.empty() && readings.back().listed == list) {
    readings.back().last_ns = std::max(readings.back().last_ns, time_ns);
    return;
  }
  if (readings.size() >= max_readings_) {
    // Keep every other reading from the first; the newest is kept too, its list still current.
    std::vector<HolderReading> thinned;
    thinned.reserve(readings.size() / 2 + 1);
    for (std::size_t index = 0; index + 1 < readings.size(); index += 2)
      thinned.push_back(std::move(readings[index]));
    thinned.push_back(std::move(readings.back()));
    readings = std::move(thinned);
  }
  readings.push_back({time_ns, time_ns, std::move(list)});
}

void HolderHistory::still(int device, std::int64_t time_ns) {
  const auto found = devices_.find(device);
  if (found == devices_.end() || found->second.empty()) return;
  HolderReading& newest = found->second.back();
  newest.last_ns = std::max(newest.last_ns, time_ns);
}

std::optional<HoldersAt> HolderHistory::at(int device, std::int64_t time_ns) const {
  const auto found = devices_.find(device);
  if (found == devices_.end() || found->second.empty()) return std::nullopt;
  const std::vector<HolderReading>& readings = found->second;
  // The first reading that began after the moment; the one before it is the newest at or before.
  const auto after = std::upper_bound(
      readings.begin(), readings.end(), time_ns,
      [](std::int64_t time, const HolderReading& reading) { return time < reading.first_ns; });
  if (after == readings.begin()) {
    return HoldersAt{&*after, -static_cast<double>(after->first_ns - time_ns) / 1e9};
  }
  const HolderReading& before = *std::prev(after);
  const double age_s =
      before.last_ns >= time_ns ? 0.0 : static_cast<double>(time_ns - before.last_ns) / 1e9;
  return HoldersAt{&before, age_s};
}

std::size_t HolderHistory::readings(int device) const {
  const auto found = devices_.find(device);
  return found == devices_.end() ? 0 : found->second.size();
}

}  // namespace gpumem::run
