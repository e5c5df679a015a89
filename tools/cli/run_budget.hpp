// `gpumem run --max-peak`: a peak budget per device, and the verdict on the run's peaks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpumem/device.hpp"
#include "gpumem/internal/run_result.hpp"

namespace gpumem::cli {

// The exit status when a measured peak exceeded its budget and the command itself succeeded
// (docs/cli.md, "Exit status").
inline constexpr int over_budget_status = 3;

// One --max-peak value: "SIZE" (every measured device) or "DEVICE=SIZE" (that CUDA ordinal).
struct PeakBudget {
  std::optional<int> device;
  std::int64_t bytes = 0;
  std::string text;  // as given
};

// `text` as a budget, or nullopt with `error` saying why ("2: no unit: write 2 GiB (binary) or 2
// GB (decimal)"). Sizes are read by the library's one parser (gpumem/internal/byte_size.hpp).
std::optional<PeakBudget> parse_budget(const std::string& text, std::string* error);

// The first budget naming a device that is not measured, as an error naming it; empty when all
// name measured devices. A device's own budget wins over the one for every device.
std::string budget_device_error(const std::vector<PeakBudget>& budgets,
                                const std::vector<DeviceInfo>& measured);

// The verdict on one device: its peak (the run's headline figure, command_peak()) against its
// budget, as the library judges it (gpumem::judge_peak).
struct BudgetVerdict {
  int device = 0;
  std::string name;
  std::int64_t budget = 0;
  std::int64_t peak = 0;
  bool exceeded = false;
  std::int64_t over = 0;  // by how much the peak is over its budget
  // Sampled (or partly sampled): a spike between two samples is not seen, so the peak may have
  // been higher than measured.
  bool may_be_higher = false;
  // Where the events bound the peak to a range (calls that allocated and freed in flight together
  // at it, command_peak_at_most): the most it may have been. `peak` is the range's low end.
  std::optional<std::int64_t> at_most;
  std::string measured;  // exact, mixed or sampled
};

// Each measured device with a budget, in the order the run lists them.
std::vector<BudgetVerdict> judge_budgets(const run::RunResult& result,
                                         const std::vector<PeakBudget>& budgets);

// One line per verdict of a device the command used: "gpumem: GPU 0 (NVIDIA H200): peak 2.1 GiB is
// over the --max-peak budget of 2.0 GiB by 100.0 MiB (exact)", or "... is within ...".
std::string budget_text(const std::vector<BudgetVerdict>& verdicts);
nlohmann::ordered_json budget_json(const std::vector<BudgetVerdict>& verdicts);

}  // namespace gpumem::cli
