// gpumem::ScopedPeakBudget: a C++ test's scope held to a budget, on the simulated driver. The
// rise it reports is the driver's, to the byte; a spike freed before the check still counts.
#include <gtest/gtest.h>

#include "gpumem/budget.hpp"
#include "sim/sim_driver.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using namespace gpumem::abi;
using testing::mib;
using testing::MiB;

struct Budget : ::testing::Test {
  testing::SimGpu gpu;
  testing::Driver driver;
  void SetUp() override { driver.use(0); }
  // A block of `bytes` allocated and freed at once.
  void spike(std::size_t bytes) {
    CUdeviceptr block = 0;
    ASSERT_EQ(driver.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&block, bytes), CUDA_SUCCESS);
    ASSERT_EQ(driver.fn<PFN_cuMemFree>("cuMemFree_v2")(block), CUDA_SUCCESS);
  }
};

TEST_F(Budget, ASpikeOverTheLimitFailsItWithTheFigures) {
  const ScopedPeakBudget budget(mib(100), 0);
  spike(150 * MiB);
  const BudgetCheck check = budget.check();
  EXPECT_FALSE(check.within);
  EXPECT_FALSE(static_cast<bool>(check));
  EXPECT_EQ(check.rise_bytes, mib(150));
  EXPECT_EQ(check.limit_bytes, mib(100));
  EXPECT_EQ(check.source, Source::exact);
  EXPECT_EQ(check.device, 0);
  EXPECT_EQ(check.message,
            "GPU 0: peak 150.0 MiB above the start, over the budget of 100.0 MiB by 50.0 MiB "
            "(exact)");
}

TEST_F(Budget, WithinTheLimitItHolds) {
  CUdeviceptr held = 0;
  ASSERT_EQ(driver.fn<PFN_cuMemAlloc>("cuMemAlloc_v2")(&held, 64 * MiB), CUDA_SUCCESS);
  const ScopedPeakBudget budget(mib(100), 0);  // what was held before does not count
  spike(100 * MiB);
  const BudgetCheck check = budget.check();
  EXPECT_TRUE(check.within) << check.message;
  EXPECT_EQ(check.rise_bytes, mib(100));
  EXPECT_EQ(check.message,
            "GPU 0: peak 100.0 MiB above the start, within the budget of 100.0 MiB (exact)");
  ASSERT_EQ(driver.fn<PFN_cuMemFree>("cuMemFree_v2")(held), CUDA_SUCCESS);
}

TEST(JudgePeak, APeakAboveItsBudgetIsOverByTheDifference) {
  const PeakVerdict verdict = judge_peak(mib(150), mib(100), true);
  EXPECT_TRUE(verdict.exceeded);
  EXPECT_EQ(verdict.over_bytes, mib(50));
  EXPECT_FALSE(verdict.may_be_higher);
}

TEST(JudgePeak, APeakEqualToItsBudgetIsWithinIt) {
  const PeakVerdict verdict = judge_peak(mib(100), mib(100), true);
  EXPECT_FALSE(verdict.exceeded);
  EXPECT_EQ(verdict.over_bytes, 0);
  EXPECT_FALSE(verdict.may_be_higher);
}

TEST(JudgePeak, AFigureNotMeasuredExactlyIsALowerBound) {
  const PeakVerdict within = judge_peak(mib(99), mib(100), false);
  EXPECT_FALSE(within.exceeded);
  EXPECT_TRUE(within.may_be_higher);
  const PeakVerdict over = judge_peak(mib(101), mib(100), false);
  EXPECT_TRUE(over.exceeded);
  EXPECT_EQ(over.over_bytes, mib(1));
  EXPECT_TRUE(over.may_be_higher);
}

}  // namespace
}  // namespace gpumem
