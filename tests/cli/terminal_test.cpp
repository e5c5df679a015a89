// `gpumem list` and `gpumem watch --count 1` in a real terminal: tmux panes of 80, 120 and 200
// columns, read back with capture-pane. Nothing wraps or overflows, the width is the pane's,
// the bars are there, and colour is on unless NO_COLOR says otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (!folder.empty() && ::access((folder + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// Columns of UTF-8 text without escape sequences: every character here is one column wide.
std::size_t columns(const std::string& line) {
  std::size_t count = 0;
  for (unsigned char c : line) count += (c & 0xC0) != 0x80;
  return count;
}

constexpr const char* kEnd = "__gpumem_test_end__";

// A tmux server of its own (its own socket, no configuration) with one pane of the given size
// running `command`; killed at the end.
class Pane {
 public:
  Pane(std::size_t width, const std::string& command)
      : folder_(short_folder()), socket_(folder_ + "/socket") {
    const CommandResult started =
        tmux({"new-session", "-d", "-x", std::to_string(width), "-y", "60", "-s", "test",
              command + "; printf '%s\\n' " + kEnd + "; sleep 300"});
    if (started.exit_code != 0) {
      std::filesystem::remove_all(folder_);
      throw std::runtime_error("tmux: " + started.err);
    }
  }
  ~Pane() {
    tmux({"kill-server"});
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);  // tmux leaves its socket behind
  }

  // Waits until the pane shows a line holding `text` (the command still running); that line.
  std::string wait_for_line(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const std::string& line : lines_of(tmux({"capture-pane", "-p", "-t", "test"}).out)) {
        if (line.find(text) != std::string::npos) return line;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the pane never showed " << text;
    return {};
  }

  // The pane's lines up to the end marker once the command has finished; `joined` puts lines
  // the terminal wrapped back together, `escapes` keeps the colours.
  std::vector<std::string> lines(bool joined, bool escapes = false) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::vector<std::string> arguments = {"capture-pane", "-p", "-t", "test"};
      if (joined) arguments.push_back("-J");
      if (escapes) arguments.push_back("-e");
      std::vector<std::string> captured = lines_of(tmux(arguments).out);
      for (std::size_t i = 0; i < captured.size(); ++i) {
        if (captured[i].find(kEnd) != std::string::npos) {
          captured.resize(i);
          return captured;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the command did not finish in the pane";
    return {};
  }

 private:
  CommandResult tmux(std::vector<std::string> arguments) const {
    arguments.insert(arguments.begin(), {"tmux", "-u", "-f", "/dev/null", "-S", socket_});
    return run_command(arguments);
  }
  // Under /tmp, whatever $TMPDIR is: a socket's path must fit in 108 bytes.
  static std::string short_folder() {
    std::string pattern = "/tmp/gpumem-tmux-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create " + pattern);
    return pattern;
  }
  std::string folder_;
  std::string socket_;
};

class Terminal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!on_path("tmux")) {
      // CI installs it (scripts/setup.sh --tests): there the test must run.
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "tmux is not installed";
      GTEST_SKIP() << "tmux is not installed (Debian package tmux): no terminal to render in";
    }
    ::unsetenv("TMUX");
    ::setenv("LC_ALL", "C.UTF-8", 1);
    ::unsetenv("COLUMNS");
  }

  // The command line run in the pane: the simulator's environment is the tmux server's own.
  static std::string gpumem(const std::string& arguments, const std::string& environment = "") {
    return "env -u NO_COLOR " + environment + " '" + gpumem_binary() + "' " + arguments;
  }

  static void expect_no_wrap(Pane& pane, std::size_t width) {
    const std::vector<std::string> screen = pane.lines(false);
    const std::vector<std::string> joined = pane.lines(true);
    EXPECT_EQ(joined.size(), screen.size()) << "a line wrapped at " << width << " columns";
    for (const std::string& line : joined) {
      EXPECT_LE(columns(line), width) << "at " << width << " columns: " << line;
    }
  }

  SimGpu gpu_;
};

std::string row_of(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return line;
  }
  return {};
}

TEST_F(Terminal, ListFitsThePaneAt80And120And200Columns) {
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 20GiB; print ready; sleep 60s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  for (std::size_t width : {80, 120, 200}) {
    SCOPED_TRACE("width " + std::to_string(width));
    Pane pane(width, gpumem("list"));
    expect_no_wrap(pane, width);
    const std::vector<std::string> screen = pane.lines(false);
    ASSERT_GE(screen.size(), 5u);
    // The pane's width was found on its own: what it shows is `--width` of it.
    const CommandResult fitted =
        run_command({gpumem_binary(), "list", "--width", std::to_string(width)});
    EXPECT_EQ(screen, lines_of(fitted.out));
    for (const char* column : {"GPU", "NAME", "TOTAL", "USED", "FREE", "USED OF TOTAL"}) {
      EXPECT_NE(screen[1].find(column), std::string::npos) << column << ": " << screen[1];
    }
    // 20 GiB of the H200's 143771 MiB is 14.2 %, shown as 15 %; the A100 holds nothing.
    const std::string h200 = row_of(screen, "NVIDIA H200");
    EXPECT_NE(h200.find("140.4 GiB  20.0 GiB  119.9 GiB"), std::string::npos) << h200;
    EXPECT_NE(h200.find("[█"), std::string::npos) << h200;
    EXPECT_NE(h200.find("]  15%"), std::string::npos) << h200;
    const std::string a100 = row_of(screen, "NVIDIA A100-SXM4-40GB");
    EXPECT_NE(a100.find("]   0%"), std::string::npos) << a100;
    EXPECT_NE(row_of(screen, std::to_string(holder.pid())).find("gpumem-sim"), std::string::npos);
    const bool full_uuid = !row_of(screen, "GPU-bbbbbbbb-2222-4000-8000-000000000001").empty();
    const bool short_uuid = !row_of(screen, "GPU-bbbbbbbb ").empty();
    EXPECT_EQ(full_uuid, width == 200);
    EXPECT_EQ(short_uuid, width == 120);
    EXPECT_EQ(!row_of(screen, "00000000:19:00.0").empty(), width == 200);
  }
}

TEST_F(Terminal, WatchOnceFitsThePaneWithPeakBars) {
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 20GiB; print ready; sleep 60s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  for (std::size_t width : {80, 120, 200}) {
    SCOPED_TRACE("width " + std::to_string(width));
    Pane pane(width, gpumem("watch --count 1"));
    expect_no_wrap(pane, width);
    const std::vector<std::string> screen = pane.lines(false);
    ASSERT_GE(screen.size(), 6u);
    EXPECT_EQ(screen[0].rfind("gpumem watch, every 1.000 s", 0), 0u) << screen[0];
    const std::string header = row_of(screen, "NAME");
    for (const char* column : {"GPU", "TOTAL", "USED", "FREE", "PEAK USED", "USED OF TOTAL"}) {
      EXPECT_NE(header.find(column), std::string::npos) << column << ": " << header;
    }
    const std::string h200 = row_of(screen, "H200");
    EXPECT_NE(h200.find("140.4 GiB  20.0 GiB  119.9 GiB"), std::string::npos) << h200;
    EXPECT_NE(h200.find("[█"), std::string::npos) << h200;
    EXPECT_NE(h200.find("]  15%"), std::string::npos) << h200;
    EXPECT_FALSE(row_of(screen, "░ highest used since the watch began").empty());
  }
}

TEST_F(Terminal, WatchShadesThePeakBeyondTheUsedMemory) {
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 20GiB; print ready; sleep 60s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  Pane pane(120, gpumem("watch --interval 0.05"));
  pane.wait_for_line("gpumem watch");
  // 40 GiB more for 100 ms, after the watch began: its sampler sees it between refreshes.
  ASSERT_EQ(run_command({sim_tool(), "workload", "alloc b 40GiB; sleep 100ms; free b"}).exit_code,
            0);
  const std::string h200 = pane.wait_for_line("20.0 GiB  119.9 GiB  542.0 MiB   60.0 GiB  [");
  // 20 of 143771 MiB solid, up to 60 shaded: on an 11-cell bar 1.6 cells, then up to 4.7.
  EXPECT_NE(h200.find("[█▋░░░      ]  15%"), std::string::npos) << h200;
}

TEST_F(Terminal, ColourOnATerminalUnlessNoColorAndAsciiWithoutUtf8) {
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 20GiB; print ready; sleep 60s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  {
    Pane pane(120, gpumem("list"));
    const std::string h200 = row_of(pane.lines(false, true), "NVIDIA H200");
    EXPECT_NE(h200.find("\033[32m█"), std::string::npos) << h200;  // green: 15 % used
  }
  {
    Pane pane(120, gpumem("list", "NO_COLOR=1"));
    const std::string h200 = row_of(pane.lines(false, true), "NVIDIA H200");
    EXPECT_NE(h200.find("[█"), std::string::npos) << h200;
    EXPECT_EQ(h200.find("\033["), std::string::npos) << h200;
  }
  {
    Pane pane(120, gpumem("list", "LC_ALL=C"));
    const std::vector<std::string> screen = pane.lines(false);
    const std::string h200 = row_of(screen, "NVIDIA H200");
    EXPECT_NE(h200.find("[##"), std::string::npos) << h200;
    for (const std::string& line : screen) {
      for (unsigned char c : line) EXPECT_LT(c, 0x80) << line;
    }
  }
}

// What `gpumem attribution`, `gpumem run --attribute` and `gpumem report` print fits an 80-column
// pane with its facts whole: sizes, shares, the allocating frame's file:line (issue 22).
TEST_F(Terminal, AttributionRunAndReportFitThePaneAt80Columns) {
  const std::string snap = std::string(GPUMEM_TEST_LAUNCHERS) + "/../../docs/snap.json";
  {
    Pane pane(80, gpumem("attribution '" + snap + "'"));
    expect_no_wrap(pane, 80);
    const std::vector<std::string> screen = pane.lines(false);
    EXPECT_NE(row_of(screen, "100.0 MiB  50.0%").find("train_step (train.cpp:42)"),
              std::string::npos);
    EXPECT_NE(row_of(screen, "level 200.0 MiB"), "");
    EXPECT_NE(row_of(screen, "a block"), "");  // the level's line wrapped, not cut
  }
  const std::string folder = temporary_folder();
  {
    Pane pane(
        80, gpumem("run --json '" + folder + "/one.json' --attribute '" + folder + "/a.json' -- '" +
                   sim_tool() + "' workload 'alloc a 100MiB; alloc b 28MiB'"));
    expect_no_wrap(pane, 80);
    const std::vector<std::string> screen = pane.lines(false);
    std::string all;
    for (const std::string& line : screen) all += line + "\n";
    // Both blocks, from main (with its file:line where the build has debug information).
    EXPECT_EQ(row_of(screen, "  2  main").rfind("128.0 MiB", 0), 0u) << all;
  }
  ASSERT_EQ(run_command({gpumem_binary(), "run", "--json", folder + "/two.json", "--", sim_tool(),
                         "workload", "alloc a 300MiB"})
                .exit_code,
            0);
  {
    Pane pane(80, gpumem("report '" + folder + "/one.json' '" + folder + "/two.json'"));
    expect_no_wrap(pane, 80);
    const std::vector<std::string> screen = pane.lines(false);
    EXPECT_NE(row_of(screen, "job maximum: 300.0 MiB"), "");
    EXPECT_NE(row_of(screen, "GPU-bbbbbbbb").find("300.0 MiB"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpumem::testing
