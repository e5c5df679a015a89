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

// Why a figure judged not exact may have been higher, in the words of its source.
std::string lower_bound_reason(Source source) {
  return source == Source::sampled ? ": a spike between samples is not seen" : "";
}

}  // namespace

PeakVerdict judge_peak(std::int64_t peak_bytes, std::int64_t budget_bytes, bool exact) noexcept {
  PeakVerdict verdict;
  verdict.exceeded = peak_bytes > budget_bytes;
  verdict.over_bytes = verdict.exceeded ? peak_bytes - budget_bytes : 0;
  verdict.may_be_higher = !exact;
  return verdict;
}

ScopedPeakBudget::ScopedPeakBudget(std::int64_t limit_bytes, int device)
    : limit_bytes_(limit_bytes), counter_(device, Source::automatic) {}

BudgetCheck ScopedPeakBudget::check() const {
  const PeakReading reading = counter_.read();
  BudgetCheck check;
  check.limit_bytes = limit_bytes_;
  check.rise_bytes = reading.peak_bytes - reading.start_bytes;
  check.source = reading.source;
  check.device = reading.device;
  const PeakVerdict verdict =
      judge_peak(check.rise_bytes, limit_bytes_, reading.source == Source::exact);
  check.within = !verdict.exceeded;
  check.message = "GPU " + std::to_string(reading.device) + ": peak " +
                  bytes_text(check.rise_bytes) + " above the start, " +
                  (check.within ? "within the budget of " + bytes_text(limit_bytes_)
                                : "over the budget of " + bytes_text(limit_bytes_) + " by " +
                                      bytes_text(verdict.over_bytes)) +
                  " (" + std::string(to_string(reading.source)) +
                  (verdict.may_be_higher ? lower_bound_reason(reading.source) : "") + ")";
  return check;
}

}  // namespace gpumem
