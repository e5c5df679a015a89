// Issue 30's second round, what reaches a terminal: bidirectional overrides (U+202E) and other
// invisible characters in host, device and process names reached the terminal in `report`,
// `diff`, `list` and `watch`; `list --csv` printed an escape-laden process name raw; usage errors
// and the run summary echoed ESC, OSC and BEL from arguments. Every view and every message now
// shows such text through the library's printable() (printable_text.hpp): as escapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

// What must never reach a terminal: C0 and C1 controls but the line feed, and the characters that
// reorder or hide text.
const char* const kHidden[] = {"\x1b",   "\x07",   "\r",     "\xc2\x9b", "\x7f",
                               "\u202e", "\u2066", "\u200b", "\u200f",   "\ufeff"};

void expect_shown_safely(const std::string& text, const std::string& what) {
  for (const char* hidden : kHidden) {
    EXPECT_EQ(text.find(hidden), std::string::npos)
        << what << " holds a hidden character (" << std::string(hidden).size() << " bytes):\n"
        << text;
  }
}

// One GPU named with a right-to-left override and a zero-width space, as a hostile driver or a
// spoofed run file could name it.
constexpr const char* kBidiGpu = R"({"devices": [
  {"name": "NVIDIA \u202eH200\u200b", "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001",
   "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}
]})";

TEST(UntrustedText, BidiInDeviceAndProcessNamesIsShownAsEscapesByListWatchAndCsv) {
  SimGpu gpu(kBidiGpu);
  // The kernel takes a process's name from the file it runs: one with an override and an isolate.
  const std::string name = "x\u202eab\u2066";
  const std::string program = temporary_folder() + "/" + name;
  std::filesystem::create_symlink(sim_tool(), program);
  BackgroundCommand holder({program, "workload", "alloc a 3MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const std::string pid = std::to_string(holder.pid());

  const CommandResult table = run_command({gpumem_binary(), "list"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  expect_shown_safely(table.out, "gpumem list");
  EXPECT_NE(table.out.find(R"(NVIDIA \u202eH200\u200b)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(pid + R"(  x\u202eab\u2066)"), std::string::npos) << table.out;

  const CommandResult csv = run_command({gpumem_binary(), "list", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  expect_shown_safely(csv.out, "gpumem list --csv");
  EXPECT_NE(csv.out.find(R"(0,0,NVIDIA \u202eH200\u200b,)"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("," + pid + R"(,x\u202eab\u2066,)"), std::string::npos) << csv.out;

  const CommandResult watch = run_command({gpumem_binary(), "watch", "--count", "1"});
  ASSERT_EQ(watch.exit_code, 0) << watch.err;
  expect_shown_safely(watch.out, "gpumem watch");
  EXPECT_NE(watch.out.find(R"( x\u202eab\u2066 3.0 MiB)"), std::string::npos) << watch.out;

  // JSON keeps the names as they are (its reader unescapes them).
  const auto document = nlohmann::json::parse(run_command({gpumem_binary(), "list", "--json"}).out);
  EXPECT_EQ(document["devices"][0]["processes"][0]["name"], name);
}

// An escape-laden process name in CSV (issue 30: `list --csv` printed it raw): no line break and
// no control in the field, so a row stays one row.
TEST(UntrustedText, AProcessNameWithControlsStaysOneCsvField) {
  SimGpu gpu;
  const std::string name = "p\x1b]0;x\x07,\"q";
  const std::string program = temporary_folder() + "/" + name;
  std::filesystem::create_symlink(sim_tool(), program);
  BackgroundCommand holder({program, "workload", "alloc a 3MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult csv = run_command({gpumem_binary(), "list", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  expect_shown_safely(csv.out, "gpumem list --csv");
  EXPECT_NE(csv.out.find("," + std::to_string(holder.pid()) + R"(,"p\x1b]0;x\x07,""q",)"),
            std::string::npos)
      << csv.out;
}

class UntrustedRunFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    SimGpu gpu;
    folder_ = temporary_folder();
    const std::string good = folder_ + "/good.json";
    const CommandResult run = run_command({gpumem_binary(), "run", "--json", good, "--", sim_tool(),
                                           "workload", "alloc a 10MiB; sleep 30ms"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    nlohmann::json document = nlohmann::json::parse(read_file(good));
    document["host"] = "node\u202e1\u2069\x1b]8;;http://x\x07";
    for (auto& device : document["devices"]) device["name"] = "H200\u202e\u200b\x1b[2J";
    hostile_ = folder_ + "/hostile.json";
    std::ofstream(hostile_) << document.dump();
    good_ = good;
  }
  std::string folder_;
  std::string good_;
  std::string hostile_;
};

TEST_F(UntrustedRunFiles, ReportShowsHostAndDeviceNamesAsEscapes) {
  const CommandResult report = run_command({gpumem_binary(), "report", hostile_});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  expect_shown_safely(report.out + report.err, "gpumem report");
  EXPECT_NE(report.out.find(R"(node\u202e1\u2069\x1b]8;;http://x\x07)"), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find(R"(H200\u202e\u200b\x1b[2J)"), std::string::npos) << report.out;
}

TEST_F(UntrustedRunFiles, DiffShowsDeviceNamesAsEscapes) {
  const CommandResult diff = run_command({gpumem_binary(), "diff", "--wide", good_, hostile_});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  expect_shown_safely(diff.out + diff.err, "gpumem diff");
  EXPECT_NE(diff.out.find(R"(\u202e)"), std::string::npos) << diff.out;
}

// The SVG views show names as the terminal views do: a bidirectional override in an SVG <text>
// reorders what a browser draws, and a control character (ESC) makes the file malformed XML.
TEST_F(UntrustedRunFiles, ReportSvgShowsHostAndDeviceNamesAsEscapes) {
  const CommandResult report = run_command({gpumem_binary(), "report", "--svg", "-", hostile_});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  expect_shown_safely(report.out, "gpumem report --svg");
  EXPECT_NE(report.out.find(R"(node\u202e1\u2069\x1b]8;;http://x\x07)"), std::string::npos)
      << report.out;
}

TEST(UntrustedText, TheRunPlotShowsTheDevicesNameAsEscapes) {
  SimGpu gpu(kBidiGpu);
  const std::string plot = temporary_folder() + "/plot.svg";
  const CommandResult run = run_command({gpumem_binary(), "run", "--plot", plot, "--", sim_tool(),
                                         "workload", "alloc a 10MiB; sleep 30ms"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string svg = read_file(plot);
  expect_shown_safely(svg, "gpumem run --plot");
  EXPECT_NE(svg.find(R"(NVIDIA \u202eH200\u200b)"), std::string::npos) << svg;
}

// A file name is anyone's text too: the error that names it shows it as escapes.
TEST_F(UntrustedRunFiles, ErrorsNamingAFileShowItsNameAsEscapes) {
  const std::string odd = folder_ + "/\x1b]0;t\x07\u202e.json";
  std::ofstream(odd) << "not json";
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{gpumem_binary(), "report", odd},
        std::vector<std::string>{gpumem_binary(), "diff", good_, odd},
        std::vector<std::string>{gpumem_binary(), "attribution", odd}}) {
    const CommandResult result = run_command(argv);
    EXPECT_NE(result.exit_code, 0) << argv[1];
    expect_shown_safely(result.out + result.err, "gpumem " + argv[1]);
    EXPECT_NE(result.err.find(R"(\x1b]0;t\x07\u202e.json)"), std::string::npos) << result.err;
  }
}

// Usage errors quote what was typed: an argument with ESC, OSC or BEL must not drive the terminal.
TEST(UntrustedText, UsageErrorsShowArgumentsAsEscapes) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"lis\x1b]0;owned\x07"}, R"(gpumem: unknown command lis\x1b]0;owned\x07)"},
      {{"list", "--w\x1b[2Jidth"}, R"(gpumem list: unknown option --w\x1b[2Jidth)"},
      {{"run", "--interval", "\x1b[2J", "--", "true"},
       R"(gpumem run: --interval \x1b[2J: not a number of seconds)"},
      {{"list", "--width", "\u202e5"}, R"(gpumem list: --width \u202e5: )"},
      {{"run", "--max-peak", "2\x07GiB", "--", "true"}, R"(gpumem run: --max-peak 2\x07GiB: )"},
      {{"run", "--json", "/nonexistent/\x1b[2J/x", "--", "true"},
       R"(gpumem run: --json: cannot write /nonexistent/\x1b[2J/x: )"},
  };
  for (const auto& [words, message] : cases) {
    std::vector<std::string> argv = {gpumem_binary()};
    argv.insert(argv.end(), words.begin(), words.end());
    const CommandResult result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << message;
    expect_shown_safely(result.err, message);
    EXPECT_EQ(result.err.rfind(message, 0), 0u) << result.err;
  }
}

// The run summary names the command by its words: shown as escapes, cut by columns.
TEST(UntrustedText, TheRunSummaryShowsTheCommandsWordsAsEscapes) {
  SimGpu gpu;
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--", "sh", "-c", "exit 0", "\x1b]0;owned\x07\u202e"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_shown_safely(result.err, "the run summary");
  EXPECT_NE(result.err.find(R"(gpumem: sh -c 'exit 0' \x1b]0;owned\x07\u202e: exit status 0)"),
            std::string::npos)
      << result.err;
  const CommandResult missing =
      run_command({gpumem_binary(), "run", "--", "/nonexistent/\x1b[2J\u202e"});
  EXPECT_NE(missing.exit_code, 0);
  expect_shown_safely(missing.err, "a command that cannot run");
  EXPECT_NE(missing.err.find(R"(/nonexistent/\x1b[2J\u202e)"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpumem::testing
