#include "gpumem/budget.hpp"

#include <cstdio>

namespace gpumem {
namespace {

// Bytes as the message shows them: binary units, one decimal ("188.0 MiB").
std::string bytes_text(std::int64_t bytes) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes < 0 ? -bytes : bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[48];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%s%lld B", bytes < 0 ? "-" : "",
                  static_cast<long long>(value));
  } else {
    std::snprintf(text, sizeof text, "%s%.1f %s", bytes < 0 ? "-" : "", value, units[unit]);
  }
  return text;
}

}  // namespace

ScopedPeakBudget::ScopedPeakBudget(std::int64_t limit_bytes, int device)
    : limit_bytes_(limit_bytes), counter_(device, Source::automatic) {}

BudgetCheck ScopedPeakBudget::check() const {
  const PeakReading reading = counter_.read();
  BudgetCheck check;
  check.limit_bytes = limit_bytes_;
  check.rise_bytes = reading.peak_bytes - reading.start_bytes;
  check.source = reading.source;
  check.device = reading.device;
  check.within = check.rise_bytes <= limit_bytes_;
  check.message =
      "GPU " + std::to_string(reading.device) + ": peak " + bytes_text(check.rise_bytes) +
      " above the start, " +
      (check.within ? "within the budget of " + bytes_text(limit_bytes_)
                    : "over the budget of " + bytes_text(limit_bytes_) + " by " +
                          bytes_text(check.rise_bytes - limit_bytes_)) +
      " (" + std::string(to_string(reading.source)) +
      (reading.source == Source::sampled ? ": a spike between samples is not seen" : "") + ")";
  return check;
}

}  // namespace gpumem
