/**
 * @file
 * @brief Holding a scope of a C++ test to a GPU memory budget: the scope's exact peak above its
 * start, against a limit, with a message that says by how much (docs/ci.md).
 *
 * @code
 * TEST(Model, ForwardFitsIn512MiB) {
 *   gpumem::ScopedPeakBudget budget(512ll << 20);
 *   model.forward(batch);
 *   const gpumem::BudgetCheck check = budget.check();
 *   EXPECT_TRUE(check.within) << check.message;
 * }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <string>

#include "gpumem/peak.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/// A figure against its budget: the one verdict that ScopedPeakBudget::check, `gpumem run
/// --max-peak` and the pytest plugin's limit_gpu_memory and limit_gpu_leaks markers render.
struct PeakVerdict {
  bool exceeded = false;        ///< the figure is above the budget (equal to it is within)
  std::int64_t over_bytes = 0;  ///< by how much it is above (0 when within)
  /// The figure was not measured exactly (sampled, or partly sampled): a spike between two
  /// samples is not in it, so it is a lower bound and the true peak may have been higher.
  bool may_be_higher = false;
};

/**
 * @brief Judges a peak against its budget.
 * @param peak_bytes the figure (a peak, or what was held)
 * @param budget_bytes the budget for it
 * @param exact whether the figure was measured exactly (false: it is a lower bound)
 * @throws nothing
 */
PeakVerdict judge_peak(std::int64_t peak_bytes, std::int64_t budget_bytes, bool exact) noexcept;

/// A scope's peak against its budget.
struct BudgetCheck {
  bool within = true;            ///< the peak above the start stayed at or under the limit
  std::int64_t limit_bytes = 0;  ///< the budget
  std::int64_t rise_bytes = 0;   ///< the peak above the scope's start (the process footprint)
  Source source = Source::none;  ///< how it was measured (sampled: a spike may be missed)
  int device = 0;                ///< CUDA ordinal
  /// One line: "GPU 0: peak 700.0 MiB above the start, over the budget of 512.0 MiB by 188.0
  /// MiB (exact)"; "within" in place of "over" when it held.
  std::string message;
  explicit operator bool() const noexcept { return within; }
};

/**
 * @brief A peak counter on one device with a limit: check() compares the peak above the start
 * (construction) with it. The counter is exact where CUPTI works (Source::automatic), so a
 * spike between two samples counts.
 */
class ScopedPeakBudget {
 public:
  /**
   * @param limit_bytes the budget for the rise of the process footprint above this moment
   * @param device a CUDA ordinal, or current_device
   * @throws std::bad_alloc only (a device that cannot be measured reads zeros, Source::none)
   */
  explicit ScopedPeakBudget(std::int64_t limit_bytes, int device = current_device);
  /// @return the peak so far against the limit; never throws but std::bad_alloc
  BudgetCheck check() const;

 private:
  std::int64_t limit_bytes_;
  PeakCounter counter_;
};

}  // namespace gpumem

#pragma GCC visibility pop
