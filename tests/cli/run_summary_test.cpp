// `gpumem run`'s summary: unused GPUs on one line, reasons wrapped whole, no GPU at all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command_runner.hpp"
#include "run_report.hpp"
#include "support/sim_gpu.hpp"
#include "text_width.hpp"

namespace gpumem::testing {
namespace {

// An 8-GPU node (NVML and CUDA order alike).
constexpr const char* kEightH100 = R"({"devices": [
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0},
  {"name": "NVIDIA H100", "total_mib": 81559, "context_mib": 0}]})";

std::vector<std::string> summary_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

TEST(RunSummary, UnusedGpusOfAnEightGpuNodeShareOneLine) {
  SimGpu gpu(kEightH100);
  ::setenv("LC_ALL", "C.UTF-8", 1);
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult run =
      run_command({gpumem_binary(), "run", "--json", json, "--", sim_tool(), "workload",
                   "device 2; alloc a 100MiB; sleep 300ms; free a"});
  ::unsetenv("LC_ALL");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = summary_lines(run.err);
  ASSERT_EQ(lines.size(), 4u) << run.err;
  EXPECT_EQ(lines[1], "gpumem: measured exactly (CUDA memory events of 1 process)");
  EXPECT_EQ(lines[2],
            "gpumem: GPU 2 (NVIDIA H100): peak 100.0 MiB process footprint (CUDA events 100.0 "
            "MiB, with contexts 100.0 MiB, NVML's per-process figures 100.0 MiB); device used "
            "peak 100.0 MiB (from 0 B)");
  EXPECT_EQ(lines[3], "gpumem: GPUs 0, 1, 3\u20137: not used");
  EXPECT_EQ(count_of(run.err, "peak 0 B process footprint"), 0);
  // The JSON still lists every device.
  const auto summary = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(summary["devices"].size(), 8u);
  EXPECT_EQ(summary["devices"][2]["peak_bytes"], 100 * MiB);
  EXPECT_EQ(summary["devices"][5]["peak_bytes"], 0);
}

TEST(RunSummary, RangesOfOrdinals) {
  EXPECT_EQ(cli::ordinal_ranges({1}, true), "1");
  EXPECT_EQ(cli::ordinal_ranges({0, 1}, true), "0, 1");
  EXPECT_EQ(cli::ordinal_ranges({1, 2, 3, 4, 5, 6, 7}, true), "1\u20137");
  EXPECT_EQ(cli::ordinal_ranges({1, 3, 4, 5, 6, 7}, false), "1, 3-7");
  EXPECT_EQ(cli::ordinal_ranges({0, 2, 3, 4, 9, 10}, false), "0, 2-4, 9, 10");
}

TEST(RunSummary, ALongFallbackReasonIsWrappedToTheWidthAndWhole) {
  SimGpu gpu(kTwoGpus, "cupti_busy");
  ::setenv("COLUMNS", "80", 1);
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult run = run_command({gpumem_binary(), "run", "--json", json, "--", sim_tool(),
                                         "workload", "alloc a 100MiB; sleep 300ms; free a"});
  ::unsetenv("COLUMNS");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(summary["processes"].size(), 1u);
  const std::string pid = std::to_string(summary["processes"][0]["pid"].get<int>());
  const std::string reason =
      "process " + pid +
      " (gpumem-sim): CUPTI is held by another tool (torch.profiler, Nsight or "
      "compute-sanitizer?): CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; peaks are sampled "
      "from NVML instead";
  EXPECT_EQ(summary["fallback_reason"], reason);
  // Every line fits in 80 columns; the lines that continue one start "gpumem:   ".
  std::string joined;
  for (const std::string& line : summary_lines(run.err)) {
    EXPECT_LE(cli::display_width(line), 80u) << line;
    if (line.rfind("gpumem:   ", 0) == 0) {
      joined += " " + line.substr(10);
    } else {
      joined += (joined.empty() ? "" : "\n") + line;
    }
  }
  EXPECT_NE(joined.find("\ngpumem: sampled every 10 ms (spikes shorter than that can be missed): "
                        "exact unavailable: " +
                        reason + "\n"),
            std::string::npos)
      << run.err;
  // 4 lines (the command's, the mode's, GPU 0's, GPU 1's), each wrapped where it is too long.
  EXPECT_EQ(count_of(joined, "\n"), 3) << joined;
  EXPECT_EQ(joined.substr(joined.rfind('\n') + 1), "gpumem: GPU 1: not used");
  EXPECT_GE(count_of(run.err, "\ngpumem:   "), 4) << run.err;
}

// The first words of a line once added up to the continuation's indent (10 columns), and the
// next word was taken for a line's first: "gpumem: noGPU measured".
TEST(RunSummary, WrapKeepsTheSpacesOfALinesFirstWords) {
  const std::string line =
      "gpumem: no GPU measured: NVML not found (libnvidia-ml.so.1: cannot "
      "open shared object file)\n";
  const std::string wrapped = cli::wrap_lines(line, 40);
  EXPECT_EQ(wrapped,
            "gpumem: no GPU measured: NVML not found\n"
            "gpumem:   (libnvidia-ml.so.1: cannot\n"
            "gpumem:   open shared object file)\n");
}

TEST(RunSummary, WrapBreaksAWordWiderThanTheLineWithoutLosingIt) {
  const std::string word(50, 'x');
  EXPECT_EQ(cli::wrap_lines("gpumem: a " + word + " b\n", 30),
            "gpumem: a\ngpumem:   xxxxxxxxxxxxxxxxxxxx\ngpumem:   xxxxxxxxxxxxxxxxxxxx\n"
            "gpumem:   xxxxxxxxxx b\n");
  EXPECT_EQ(cli::wrap_lines("gpumem: short\n", 30), "gpumem: short\n");
}

// No NVML, no CUDA driver, no CUPTI: the libraries gpumem is pointed at do not exist.
class NoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = temporary_folder() + "/missing";
    ::setenv("GPUMEM_NVML_LIBRARY", (missing + "/libnvidia-ml.so.1").c_str(), 1);
    ::setenv("GPUMEM_CUDA_LIBRARY", (missing + "/libcuda.so.1").c_str(), 1);
    ::setenv("GPUMEM_CUPTI_LIBRARY", (missing + "/libcupti.so.13").c_str(), 1);
    // The reason, as `gpumem list` gives it.
    const CommandResult list = run_command({gpumem_binary(), "list"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const std::string prefix = "gpumem: no GPU found: ";
    ASSERT_EQ(list.err.rfind(prefix, 0), 0u) << list.err;
    reason_ = list.err.substr(prefix.size(), list.err.size() - prefix.size() - 1);
    ASSERT_NE(reason_.find(missing + "/libnvidia-ml.so.1"), std::string::npos) << reason_;
  }
  std::string reason_;
};

TEST_F(NoGpu, ExactModeRefusesWithTheReasonAndRunsNothing) {
  const std::string marker = temporary_folder() + "/ran";
  const CommandResult run = run_command(
      {gpumem_binary(), "run", "--mode", "exact", "--", "sh", "-c", "echo > '" + marker + "'"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "gpumem run: --mode exact: no GPU measured: " + reason_ +
                         " (the command was not run)\n");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(NoGpu, AutoModeRunsTheCommandAndSaysNoGpuWasMeasured) {
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult run =
      run_command({gpumem_binary(), "run", "--json", json, "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(run.exit_code, 3);
  const auto lines = summary_lines(run.err);
  ASSERT_EQ(lines.size(), 2u) << run.err;
  EXPECT_EQ(lines[0].rfind("gpumem: sh -c 'exit 3': exit status 3, ran ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "gpumem: no GPU measured: " + reason_);
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["mode"], "sampled");
  EXPECT_EQ(summary["fallback_reason"], "no GPU measured: " + reason_);
  EXPECT_TRUE(summary["devices"].empty());
}

}  // namespace
}  // namespace gpumem::testing
