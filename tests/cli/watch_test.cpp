// `gpumem watch` when its output is not a terminal: plain lines, one per device and refresh.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

TEST(Watch, PrintsOneLinePerDeviceAndRefreshWithUsageProcessesAndPeak) {
  SimGpu gpu;
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 64MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult result =
      run_command({gpumem_binary(), "watch", "--count", "3", "--interval", "0.05"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(std::count(result.out.begin(), result.out.end(), '\n'), 6) << result.out;
  EXPECT_EQ(result.out.find("\033["), std::string::npos);  // no terminal control codes
  EXPECT_NE(result.out.find(" GPU 0 NVIDIA H200: used 64.0 MiB of 140.4 GiB, peak 64.0 MiB, 1 "
                            "process: " +
                            std::to_string(holder.pid()) + " gpumem-sim 64.0 MiB\n"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(" GPU 1 NVIDIA A100-SXM4-40GB: used 0 B of 40.0 GiB, peak 0 B, 0 "
                            "processes\n"),
            std::string::npos)
      << result.out;
}

TEST(Watch, RejectsANonNumericInterval) {
  SimGpu gpu;
  const CommandResult result = run_command({gpumem_binary(), "watch", "--interval", "soon"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.out, "");
}

}  // namespace
}  // namespace gpumem::testing
