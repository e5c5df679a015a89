// The files `gpumem run` writes: the timeline CSV and the SVG plot.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpumem::testing
