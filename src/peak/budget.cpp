#include "gpumem/budget.hpp"

#include "gpumem/internal/byte_size.hpp"

namespace gpumem {
namespace {

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
                  detail::byte_size_text(check.rise_bytes) + " above the start, " +
                  (check.within ? "within the budget of " + detail::byte_size_text(limit_bytes_)
                                : "over the budget of " + detail::byte_size_text(limit_bytes_) +
                                      " by " + detail::byte_size_text(verdict.over_bytes)) +
                  " (" + std::string(to_string(reading.source)) +
                  (verdict.may_be_higher ? lower_bound_reason(reading.source) : "") + ")";
  return check;
}

}  // namespace gpumem
