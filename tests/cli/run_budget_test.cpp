// `gpumem run --max-peak`: the command runs as usual; a peak over its budget is one line, a
// verdict in the JSON and status 3, the command's own failure first. Issue 20.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

constexpr const char* kOneH200WithContext =
    R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})";

struct BudgetRun {
  CommandResult result;
  nlohmann::json summary;
};

BudgetRun run_with_budgets(std::vector<std::string> budgets, const std::string& script,
                           std::vector<std::string> extra = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = {gpumem_binary(), "run", "--json", json, "-i", "0.005"};
  for (const std::string& budget : budgets) argv.insert(argv.end(), {"--max-peak", budget});
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", sim_tool(), "workload", script});
  BudgetRun run{run_command(argv), {}};
  const std::string text = read_file(json);
  if (!text.empty()) run.summary = nlohmann::json::parse(text);
  return run;
}

// The budget is exceeded only by a 1 ms spike between two samples: the exact count catches it.
TEST(RunBudget, ASpikeOverTheBudgetBetweenSamplesFailsTheRun) {
  SimGpu gpu(kOneH200WithContext);
  const BudgetRun run =
      run_with_budgets({"600 MiB"}, "alloc a 100MiB; sleep 100ms; spike 50MiB 1ms; sleep 100ms");
  EXPECT_EQ(run.result.exit_code, 3) << run.result.err;
  EXPECT_NE(run.result.err.find("gpumem: GPU 0 (NVIDIA H200): peak 650.0 MiB is over the "
                                "--max-peak budget of 600.0 MiB by 50.0 MiB (exact)\n"),
            std::string::npos)
      << run.result.err;
  ASSERT_EQ(run.summary["budgets"].size(), 1u) << run.summary.dump(2);
  const auto& verdict = run.summary["budgets"][0];
  EXPECT_EQ(verdict["device"], 0);
  EXPECT_EQ(verdict["budget_bytes"], 600 * MiB);
  EXPECT_EQ(verdict["peak_bytes"], 650 * MiB);
  EXPECT_EQ(verdict["peak_bytes"], run.summary["devices"][0]["peak_bytes"]);
  EXPECT_EQ(verdict["exceeded"], true);
  EXPECT_EQ(verdict["measured"], "exact");
  EXPECT_EQ(verdict["may_be_higher"], false);
  EXPECT_EQ(run.summary["budget_exceeded"], true);
  EXPECT_EQ(run.summary["exit_code"], 0);  // the command's own status, in the record
}

TEST(RunBudget, WithinTheBudgetTheCommandsStatusStands) {
  SimGpu gpu(kOneH200WithContext);
  const BudgetRun run =
      run_with_budgets({"650MiB"}, "alloc a 100MiB; spike 50MiB 1ms; sleep 100ms");
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.err.find("peak 650.0 MiB is within the --max-peak budget of 650.0 MiB "
                                "(exact)"),
            std::string::npos)
      << run.result.err;
  EXPECT_EQ(run.summary["budgets"][0]["exceeded"], false);
  EXPECT_EQ(run.summary["budget_exceeded"], false);
  // Without a budget: no verdict.
  const BudgetRun free = run_with_budgets({}, "alloc a 100MiB");
  EXPECT_EQ(free.result.exit_code, 0);
  EXPECT_TRUE(free.summary["budgets"].empty());
  EXPECT_EQ(free.result.err.find("--max-peak"), std::string::npos) << free.result.err;
}

// One device's own budget wins over the one for every device; other devices keep that one.
TEST(RunBudget, ADevicesOwnBudgetWinsOverTheOneForEvery) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771},
                             {"name": "NVIDIA H100", "total_mib": 81559}]})");
  const BudgetRun run = run_with_budgets({"1=300MiB", "100 MiB"},
                                         "device 0; alloc a 64MiB; device 1; alloc b 200MiB");
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["budgets"].size(), 2u) << run.summary.dump(2);
  EXPECT_EQ(run.summary["budgets"][0]["budget_bytes"], 100 * MiB);
  EXPECT_EQ(run.summary["budgets"][0]["peak_bytes"], 64 * MiB);
  EXPECT_EQ(run.summary["budgets"][1]["budget_bytes"], 300 * MiB);
  EXPECT_EQ(run.summary["budgets"][1]["peak_bytes"], 200 * MiB);
  const BudgetRun over = run_with_budgets({"1=150MiB"}, "device 1; alloc b 200MiB");
  EXPECT_EQ(over.result.exit_code, 3) << over.result.err;
  ASSERT_EQ(over.summary["budgets"].size(), 1u);  // device 0 has no budget
  EXPECT_EQ(over.summary["budgets"][0]["device"], 1);
}

TEST(RunBudget, SampledModeSaysThePeakMayHaveBeenHigher) {
  SimGpu gpu(kOneH200WithContext);
  const BudgetRun run =
      run_with_budgets({"2 GiB"}, "alloc a 100MiB; sleep 100ms", {"--mode", "sampled"});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.err.find("is within the --max-peak budget of 2.0 GiB (sampled: the peak "
                                "may have been higher)"),
            std::string::npos)
      << run.result.err;
  EXPECT_EQ(run.summary["budgets"][0]["may_be_higher"], true);
}

TEST(RunBudget, TheCommandsOwnFailureComesFirst) {
  SimGpu gpu(kOneH200WithContext);
  const BudgetRun run = run_with_budgets({"1 MiB"}, "alloc a 100MiB; exit 4");
  EXPECT_EQ(run.result.exit_code, 4) << run.result.err;
  EXPECT_EQ(run.summary["budget_exceeded"], true);
}

TEST(RunBudget, ABadBudgetIsAUsageErrorAndNothingRuns) {
  SimGpu gpu(kOneH200WithContext);
  const std::string marker = temporary_folder() + "/ran";
  for (const auto& [budget, message] : std::vector<std::pair<std::string, std::string>>{
           {"2",
            "--max-peak 2: no unit: write 2GiB, or quote the size with its space ('2 GiB': "
            "unquoted, the shell passes the unit as a word of its own)"},
           {"0=2", "--max-peak 0=2: no unit: write 0=2GiB, or quote"},
           {"2 GiBs", "--max-peak 2 GiBs: unknown unit"},
           {"x=2GiB", "--max-peak x=2GiB: 'x' is not a CUDA device ordinal"},
           {"7=2GiB", "--max-peak 7=2GiB: GPU 7 is not measured (1 measured)"}}) {
    const CommandResult result =
        run_command({gpumem_binary(), "run", "--max-peak", budget, "--", "touch", marker});
    EXPECT_EQ(result.exit_code, 2) << budget;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << budget;
  }
}

// Issue 31: "--max-peak 2 GiB" unquoted is two words to the shell; the refusal says how to write
// the size as one word, not to write what was typed, and nothing runs.
TEST(RunBudget, ASizeTheShellSplitInTwoSaysHowToWriteItAsOneWord) {
  SimGpu gpu(kOneH200WithContext);
  const std::string marker = temporary_folder() + "/ran";
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--max-peak", "2", "GiB", "--", "touch", marker});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "gpumem run: --max-peak 2: no unit: write 2GiB, or quote the size with its space ('2 "
            "GiB': unquoted, the shell passes the unit as a word of its own)\n");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace gpumem::testing
