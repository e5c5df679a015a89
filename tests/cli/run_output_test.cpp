// The files `gpumem run` writes: the timeline CSV and the SVG plot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

struct Outputs {
  std::string folder;
  CommandResult result;
  std::string csv;
  std::string svg;
};

Outputs run_with_outputs(const std::string& script, std::vector<std::string> options = {}) {
  Outputs outputs;
  outputs.folder = temporary_folder();
  std::vector<std::string> argv = {gpumem_binary(), "run",
                                   "--timeline",    outputs.folder + "/timeline.csv",
                                   "--plot",        outputs.folder + "/plot.svg"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", sim_tool(), "workload", script});
  outputs.result = run_command(argv);
  outputs.csv = read_file(outputs.folder + "/timeline.csv");
  outputs.svg = read_file(outputs.folder + "/plot.svg");
  return outputs;
}

struct CsvRow {
  double time_s;
  int device;
  std::string series;
  std::string pid;
  long long bytes;
};

std::vector<CsvRow> parse_timeline(const std::string& csv) {
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "time_s,device,series,pid,used_bytes");
  std::vector<CsvRow> rows;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (cells.size() == 4) cells.insert(cells.begin() + 3, "");
    EXPECT_EQ(cells.size(), 5u) << line;
    if (cells.size() != 5) continue;
    rows.push_back(
        {std::stod(cells[0]), std::stoi(cells[1]), cells[2], cells[3], std::stoll(cells[4])});
  }
  return rows;
}

// Well-formed enough for any XML parser: every tag closed in order, attributes quoted.
bool well_formed_xml(const std::string& text, std::string& why) {
  std::vector<std::string> open;
  std::size_t at = 0;
  while ((at = text.find('<', at)) != std::string::npos) {
    const std::size_t end = text.find('>', at);
    if (end == std::string::npos) return (why = "unterminated tag"), false;
    std::string tag = text.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty()) return (why = "empty tag"), false;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return (why = "quote in " + tag), false;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return (why = "mismatched </" + name + ">"), false;
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
  }
  if (!open.empty()) return (why = "unclosed <" + open.back() + ">"), false;
  return true;
}

TEST(RunOutput, TimelineHasEverySeriesAndTheExactSpike) {
  SimGpu gpu;
  const Outputs run = run_with_outputs("alloc a 100MiB; sleep 300ms; spike 50MiB 1ms; free a");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::vector<CsvRow> rows = parse_timeline(run.csv);
  ASSERT_FALSE(rows.empty());
  long long exact_max = 0, tree_max = 0, device_max = 0;
  double previous = 0;
  bool process_rows = false;
  for (const CsvRow& row : rows) {
    EXPECT_GE(row.time_s, previous);
    previous = row.time_s;
    if (row.device != 0) continue;
    if (row.series == "exact") exact_max = std::max(exact_max, row.bytes);
    if (row.series == "tree") tree_max = std::max(tree_max, row.bytes);
    if (row.series == "device") device_max = std::max(device_max, row.bytes);
    if (row.series == "process") {
      process_rows = true;
      EXPECT_FALSE(row.pid.empty());
    }
  }
  EXPECT_EQ(exact_max, static_cast<long long>(150 * MiB));
  EXPECT_GE(tree_max, static_cast<long long>(100 * MiB));
  EXPECT_GE(device_max, static_cast<long long>(100 * MiB));
  EXPECT_TRUE(process_rows);
}

TEST(RunOutput, PlotIsWellFormedSvgWithThePeakMarkedAndLabelled) {
  SimGpu gpu;
  const Outputs run = run_with_outputs("device 1; alloc a 100MiB; spike 50MiB 1ms; free a");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  std::string why;
  EXPECT_TRUE(well_formed_xml(run.svg, why)) << why;
  EXPECT_EQ(run.svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(run.svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(run.svg.find("<g class=\"peak\" data-peak-bytes=\"" + std::to_string(150 * MiB)),
            std::string::npos);
  EXPECT_NE(run.svg.find(">peak 150.0 MiB at "), std::string::npos);
  EXPECT_NE(run.svg.find("GPU 1 · NVIDIA A100-SXM4-40GB"), std::string::npos);
  EXPECT_NE(run.svg.find("class=\"series-exact\""), std::string::npos);
  EXPECT_NE(run.svg.find(" MiB</text>"), std::string::npos);  // axis labelled in MiB
  // Only the two finished files: the temporary ones were renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(run.folder),
                          std::filesystem::directory_iterator()),
            2);
}

// Two 1 ms spikes between 50 ms samples: the second is no peak, and only the events show it.
const char* kTwoSpikes =
    "alloc a 100MiB; sleep 100ms; spike 50MiB 1ms; sleep 100ms; spike 30MiB 1ms; sleep 100ms; "
    "free a; sleep 20ms";

std::vector<CsvRow> exact_rows(const std::vector<CsvRow>& rows, int device) {
  std::vector<CsvRow> exact;
  for (const CsvRow& row : rows) {
    if (row.device == device && row.series == "exact" &&
        (exact.empty() || exact.back().bytes != row.bytes))
      exact.push_back(row);
  }
  return exact;
}

TEST(RunOutput, TimelineHasTheExactLevelAtEveryEvent) {
  SimGpu gpu;
  const Outputs run = run_with_outputs(kTwoSpikes, {"-i", "0.05"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::vector<CsvRow> exact = exact_rows(parse_timeline(run.csv), 0);
  std::vector<long long> levels;
  for (const CsvRow& row : exact) levels.push_back(row.bytes / static_cast<long long>(MiB));
  EXPECT_EQ(levels, (std::vector<long long>{0, 100, 150, 100, 130, 100, 0})) << run.csv;
  ASSERT_EQ(exact.size(), 7u);
  for (std::size_t spike : {2u, 4u}) {
    const double held = exact[spike + 1].time_s - exact[spike].time_s;
    EXPECT_GE(held, 0.0009) << "spike " << spike;  // the 1 ms it lasted, not a sample interval
    EXPECT_LT(held, 0.04) << "spike " << spike;
  }
  EXPECT_NEAR(exact[4].time_s - exact[2].time_s, 0.1, 0.05);
}

// The numbers of a path's commands, by command letter.
std::vector<std::pair<char, double>> path_commands(const std::string& d) {
  std::vector<std::pair<char, double>> commands;
  std::istringstream in(d);
  std::string token;
  while (in >> token) {
    commands.push_back({token[0], std::stod(token.substr(1))});
    if (token[0] == 'M') {  // M x y
      in >> token;
      commands.push_back({'y', std::stod(token)});
    }
  }
  return commands;
}

std::string attribute(const std::string& svg, const std::string& element_start,
                      const std::string& name) {
  const std::size_t at = svg.find(element_start);
  if (at == std::string::npos) return {};
  const std::size_t value = svg.find(name + "=\"", at);
  if (value == std::string::npos) return {};
  const std::size_t begin = value + name.size() + 2;
  return svg.substr(begin, svg.find('"', begin) - begin);
}

TEST(RunOutput, PlotDrawsTheExactLevelAsStepsWithEverySpikeAtItsHeight) {
  SimGpu gpu;
  const Outputs run = run_with_outputs(kTwoSpikes, {"-i", "0.05"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string d = attribute(run.svg, "<path class=\"series-exact\"", "d");
  ASSERT_FALSE(d.empty()) << run.svg;
  const auto commands = path_commands(d);
  ASSERT_GE(commands.size(), 2u);
  EXPECT_EQ(commands[0].first, 'M');
  for (std::size_t i = 2; i < commands.size(); ++i)
    EXPECT_TRUE(commands[i].first == 'H' || commands[i].first == 'V') << d;  // steps only
  const double zero_y = commands[1].second;                                  // it starts at 0
  const double peak_y = std::stod(attribute(run.svg, "<g class=\"peak\"", "y1"));
  auto reaches = [&](double y) {
    return std::any_of(commands.begin(), commands.end(), [&](const auto& command) {
      return command.first == 'V' && std::abs(command.second - y) < 0.15;
    });
  };
  EXPECT_TRUE(reaches(peak_y)) << d;                                  // 150 MiB, the peak
  EXPECT_TRUE(reaches(zero_y + (peak_y - zero_y) * 130 / 150)) << d;  // the second spike
  EXPECT_TRUE(reaches(zero_y + (peak_y - zero_y) * 100 / 150)) << d;
}

}  // namespace
}  // namespace gpumem::testing
