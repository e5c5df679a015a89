#include "run_budget.hpp"

#include <algorithm>

#include "format.hpp"
#include "gpumem/budget.hpp"
#include "gpumem/internal/byte_size.hpp"
#include "run_report.hpp"
#include "text_width.hpp"

namespace gpumem::cli {

std::optional<PeakBudget> parse_budget(const std::string& text, std::string* error) {
  PeakBudget budget;
  budget.text = text;
  std::string size = text;
  if (const std::size_t equals = text.find('='); equals != std::string::npos) {
    const std::string device = text.substr(0, equals);
    if (device.empty() || device.size() > 6 ||
        device.find_first_not_of("0123456789") != std::string::npos) {
      if (error != nullptr) *error = "'" + device + "' is not a CUDA device ordinal (DEVICE=SIZE)";
      return std::nullopt;
    }
    budget.device = std::stoi(device);
    size = text.substr(equals + 1);
  }
  std::string why;
  const std::optional<std::uint64_t> bytes = detail::parse_byte_size(size, &why);
  if (!bytes) {
    // A bare number is most often "2 GiB" unquoted, which the shell hands over as two words:
    // say how to write it as one, rather than to write what was typed.
    if (why.rfind("no unit", 0) == 0) {
      why = "no unit: write " + text + "GiB, or quote the size with its space ('" + text +
            " GiB': unquoted, the shell passes the unit as a word of its own)";
    }
    if (error != nullptr) *error = why;
    return std::nullopt;
  }
  budget.bytes = static_cast<std::int64_t>(*bytes);
  return budget;
}

std::string budget_device_error(const std::vector<PeakBudget>& budgets,
                                const std::vector<DeviceInfo>& measured) {
  for (const PeakBudget& budget : budgets) {
    if (!budget.device) continue;
    if (std::none_of(measured.begin(), measured.end(),
                     [&](const DeviceInfo& device) { return device.device == *budget.device; }))
      return "--max-peak " + budget.text + ": GPU " + std::to_string(*budget.device) +
             " is not measured (" + std::to_string(measured.size()) + " measured)";
  }
  return "";
}

std::vector<BudgetVerdict> judge_budgets(const run::RunResult& result,
                                         const std::vector<PeakBudget>& budgets) {
  std::vector<BudgetVerdict> verdicts;
  for (const DeviceTrack& device : result.devices) {
    // The device's own budget, else the one for every device; the last one given of each.
    std::optional<std::int64_t> own, every;
    for (const PeakBudget& budget : budgets) {
      if (budget.device == device.info.device) own = budget.bytes;
      if (!budget.device) every = budget.bytes;
    }
    const std::optional<std::int64_t> limit = own ? own : every;
    if (!limit) continue;
    BudgetVerdict verdict;
    verdict.device = device.info.device;
    verdict.name = device.info.name;
    verdict.budget = *limit;
    verdict.peak = command_peak(result, device);
    const PeakVerdict judged =
        judge_peak(verdict.peak, verdict.budget, result.measured == Measured::exact);
    verdict.exceeded = judged.exceeded;
    verdict.over = judged.over_bytes;
    verdict.at_most = command_peak_at_most(result, device);
    verdict.may_be_higher = judged.may_be_higher || verdict.at_most.has_value();
    verdict.measured = to_string(result.measured);
    verdicts.push_back(std::move(verdict));
  }
  return verdicts;
}

std::string budget_text(const std::vector<BudgetVerdict>& verdicts) {
  std::string out;
  for (const BudgetVerdict& verdict : verdicts) {
    // A device the command never used is within any budget, and the summary says it was unused.
    if (verdict.peak == 0) continue;
    out += "gpumem: GPU " + std::to_string(verdict.device) + " (" + printable(verdict.name) +
           "): peak " + format_bytes(verdict.peak) + " is ";
    out += verdict.exceeded ? "over the --max-peak budget of " + format_bytes(verdict.budget) +
                                  " by " + format_bytes(verdict.over)
                            : "within the --max-peak budget of " + format_bytes(verdict.budget);
    if (verdict.at_most) {
      out += " (" + verdict.measured + " to a range: the peak may have been up to " +
             format_bytes(*verdict.at_most) +
             (!verdict.exceeded && *verdict.at_most > verdict.budget ? ", over the budget)" : ")");
    } else {
      out += verdict.may_be_higher ? " (" + verdict.measured + ": the peak may have been higher)"
                                   : " (" + verdict.measured + ")";
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json budget_json(const std::vector<BudgetVerdict>& verdicts) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BudgetVerdict& verdict : verdicts) {
    out.push_back({{"device", verdict.device},
                   {"budget_bytes", verdict.budget},
                   {"peak_bytes", verdict.peak},
                   {"exceeded", verdict.exceeded},
                   {"measured", verdict.measured},
                   {"may_be_higher", verdict.may_be_higher},
                   {"peak_at_most_bytes", verdict.at_most ? nlohmann::ordered_json(*verdict.at_most)
                                                          : nlohmann::ordered_json()}});
  }
  return out;
}

}  // namespace gpumem::cli
