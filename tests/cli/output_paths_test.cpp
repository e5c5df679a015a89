// What `gpumem run` and `gpumem report` write to: regular files (new or replaced) and '-'
// (stdout), nothing else. A device node, a FIFO, a socket or a symbolic link named as an output
// is refused before anything runs (status 2, one line) and left as it was; and `gpumem report`
// prints no terminal control from a run file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "cli/special_files.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Runs `words` in `folder` (a relative '-' file would land there).
CommandResult run_in(const std::string& folder, const std::vector<std::string>& words) {
  std::string line = "cd '" + folder + "' && exec";
  for (const std::string& word : words) line += " '" + word + "'";
  return run_command({"sh", "-c", line});
}

TEST(OutputPaths, RunRefusesEverySpecialFileBeforeTheCommandRuns) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const SpecialFiles special(folder);
  ASSERT_GE(special.files().size(), 4u);
  const std::string marker = folder + "/ran";
  special.expect_refused(
      "gpumem run", {"--json", "--timeline", "--plot", "--attribute", "--html"},
      [&](const std::string& option, const std::string& path) {
        return std::vector<std::string>{gpumem_binary(), "run", option, path, "--",
                                        "touch",         marker};
      },
      [&](const std::string& option, const std::string& path, const CommandResult& result) {
        EXPECT_EQ(lines(result.err), 1u) << result.err;
        EXPECT_FALSE(std::filesystem::exists(marker)) << option << " " << path;
      });
  // A good output beside a bad one: still nothing runs, nothing is written.
  const CommandResult mixed = run_command({gpumem_binary(), "run", "--json", folder + "/ok.json",
                                           "--plot", folder + "/fifo", "--", "touch", marker});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err;
  EXPECT_NE(mixed.err.find("--plot: cannot write " + folder + "/fifo: it is a FIFO"),
            std::string::npos)
      << mixed.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_FALSE(std::filesystem::exists(folder + "/ok.json"));
}

TEST(OutputPaths, RunWritesADashToStdoutAndRefusesOneFileTwice) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const CommandResult result =
      run_in(folder, {gpumem_binary(), "run", "--json", "-", "--", sim_tool(), "workload",
                      "alloc a 10MiB; sleep 30ms"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 10 * MiB);
  EXPECT_FALSE(std::filesystem::exists(folder + "/-"));

  const std::string marker = folder + "/ran";
  CommandResult twice = run_command({gpumem_binary(), "run", "--json", folder + "/a", "--plot",
                                     folder + "/./a", "--", "touch", marker});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err, "gpumem run: --json and --plot both name " + folder + "/a and " + folder +
                           "/./a (both " + folder + "/a): each output needs a file of its own\n");
  twice = run_command(
      {gpumem_binary(), "run", "--json", "-", "--timeline", "-", "--", "touch", marker});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err,
            "gpumem run: --json and --timeline both name '-': only one output can go to stdout\n");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// Issue 30: `gpumem run --json x.json --plot ./x.json` wrote both to one file (the JSON lost):
// relative spellings of one file are compared by what they resolve to.
TEST(OutputPaths, RunRefusesTwoSpellingsOfOneFileBeforeTheCommandRuns) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  std::filesystem::create_directory(folder + "/sub");
  for (const auto& [json, plot] : std::vector<std::pair<std::string, std::string>>{
           {"x.json", "./x.json"}, {"x.json", "sub/../x.json"}}) {
    const CommandResult result = run_in(
        folder, {gpumem_binary(), "run", "--json", json, "--plot", plot, "--", "touch", "ran"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(
        result.err.rfind(
            "gpumem run: --json and --plot both name " + json + " and " + plot + " (both ", 0),
        0u)
        << result.err;
    EXPECT_FALSE(std::filesystem::exists(folder + "/ran"));
    EXPECT_FALSE(std::filesystem::exists(folder + "/x.json"));
  }
}

// Issue 30: replacing an existing 0600 output made it 0644; it keeps its mode.
TEST(OutputPaths, AReplacedOutputKeepsItsMode) {
  SimGpu gpu;
  const std::string path = temporary_folder() + "/private.json";
  std::ofstream(path) << "{}";
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  const CommandResult result = run_command(
      {gpumem_binary(), "run", "--json", path, "--", sim_tool(), "workload", "alloc a 1MiB"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_EQ(nlohmann::json::parse(read_file(path))["devices"][0]["peak_bytes"], MiB);
}

class ReportOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    SimGpu gpu;
    folder_ = temporary_folder();
    good_ = folder_ + "/good.json";
    const CommandResult run = run_command({gpumem_binary(), "run", "--json", good_, "--",
                                           sim_tool(), "workload", "alloc a 10MiB; sleep 30ms"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  std::string folder_;
  std::string good_;
};

TEST_F(ReportOutputs, SpecialFilesAreRefusedBeforeAnythingIsRead) {
  const SpecialFiles special(folder_);
  special.expect_refused(
      "gpumem report", {"--json", "--svg"},
      [&](const std::string& option, const std::string& path) {
        return std::vector<std::string>{gpumem_binary(), "report", option, path, good_};
      });
}

// A run file is anyone's input: its host, device names and schema must not drive the terminal
// of whoever reports it (set its title, clear the screen) or forge lines of the report.
TEST_F(ReportOutputs, NamesFromARunFilePrintNoTerminalControl) {
  nlohmann::json run = nlohmann::json::parse(read_file(good_));
  run["host"] = std::string("node\x1b]0;owned\x07\x1b[2J\r\nforged: line") + '\0' + "x";
  run["devices"][0]["name"] =
      "H200\xc2\x9b"
      "31m\x7f";  // C1 CSI, in UTF-8, and DEL
  const std::string hostile = folder_ + "/hostile.json";
  std::ofstream(hostile) << run.dump();
  nlohmann::json other = nlohmann::json::parse(read_file(good_));
  other["schema"] = "\x1b[2Jgpumem.list/1";
  const std::string foreign = folder_ + "/foreign.json";
  std::ofstream(foreign) << other.dump();

  const CommandResult result =
      run_command({gpumem_binary(), "report", "--skip-bad", hostile, foreign});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const std::string* text : {&result.out, &result.err}) {
    for (const char* control : {"\x1b", "\x07", "\r", "\xc2\x9b", "\x7f"})
      EXPECT_EQ(text->find(control), std::string::npos) << *text;
    EXPECT_EQ(text->find(std::string(1, '\0')), std::string::npos) << *text;
    EXPECT_EQ(text->find("\nforged"), std::string::npos) << *text;
  }
  // The name is still there, each control character an escape (printable_text.hpp).
  EXPECT_NE(result.out.find(R"(node\x1b]0;owned\x07\x1b[2J\r\nforged: line\x00x)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(R"(H200\u009b31m\x7f)"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find(R"(schema \x1b[2Jgpumem.list/1 is not a run file)"), std::string::npos)
      << result.err;
  // The JSON keeps the names as they were (JSON escapes them).
  const CommandResult json = run_command({gpumem_binary(), "report", "--json", "-", hostile});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["nodes"][0]["node"], run["host"]);
}

}  // namespace
}  // namespace gpumem::testing
