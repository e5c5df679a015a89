// The gpumem command's usage errors, word for word (each on stderr, status 2, nothing on stdout),
// its --help, and the completions and man page it writes from its own definition.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/command_runner.hpp"

namespace gpumem::testing {
namespace {

struct UsageCase {
  std::vector<std::string> arguments;
  std::string err;
};

void expect_usage_error(const UsageCase& usage) {
  std::vector<std::string> argv = {gpumem_binary()};
  argv.insert(argv.end(), usage.arguments.begin(), usage.arguments.end());
  const CommandResult result = run_command(argv);
  const std::string shown = usage.arguments.empty() ? "(none)" : usage.arguments.front();
  EXPECT_EQ(result.exit_code, 2) << shown << ": " << result.err;
  EXPECT_EQ(result.err, usage.err) << shown;
  EXPECT_EQ(result.out, "") << shown;
}

TEST(UsageErrors, AnUnknownCommandOrOptionSuggestsTheClosestName) {
  for (const UsageCase& usage : std::vector<UsageCase>{
           {{"lsit"}, "gpumem: unknown command lsit; did you mean list?\n"},
           {{"repotr", "a.json"}, "gpumem: unknown command repotr; did you mean report?\n"},
           {{"frobnicate"},
            "gpumem: unknown command frobnicate (the commands: list, watch, run, report, "
            "attribution, diff, serve, completion)\n"},
           {{"--verison"}, "gpumem: unknown option --verison; did you mean --version?\n"},
           {{"watch", "--intreval", "2"},
            "gpumem watch: unknown option --intreval; did you mean --interval?\n"},
           {{"list", "--wdth=50"}, "gpumem list: unknown option --wdth; did you mean --width?\n"},
           {{"run", "--mdoe", "exact", "--", "true"},
            "gpumem run: unknown option --mdoe; did you mean --mode?\n"},
           // Too far from every name to be a typo of one: no guess.
           {{"watch", "--colour"}, "gpumem watch: unknown option --colour\n"},
           {{"list", "extra"},
            "gpumem list: unexpected argument extra\nUsage: gpumem list [OPTIONS]\n"},
       }) {
    expect_usage_error(usage);
  }
}

TEST(UsageErrors, AMissingArgumentIsNamedWithTheUsageLine) {
  for (const UsageCase& usage : std::vector<UsageCase>{
           {{}, "gpumem: missing COMMAND\nUsage: gpumem [OPTIONS] COMMAND [ARGS...]\n"},
           {{"report"},
            "gpumem report: missing FILE...: run files written by gpumem run --json\n"
            "Usage: gpumem report [OPTIONS] FILE...\n"},
           {{"attribution"},
            "gpumem attribution: missing FILE: an attribution document (gpumem.attribution/1) "
            "or a PyTorch memory snapshot (the pickle that torch.cuda.memory's _dump_snapshot "
            "writes)\n"
            "Usage: gpumem attribution [OPTIONS] FILE\n"},
           {{"run", "--mode", "exact"},
            "gpumem run: missing COMMAND\nUsage: gpumem run [OPTIONS] -- COMMAND [ARGS...]\n"},
           {{"watch", "--interval"},
            "gpumem watch: --interval needs a value (seconds, 0.01 to 86400)\n"
            "Usage: gpumem watch [OPTIONS]\n"},
       }) {
    expect_usage_error(usage);
  }
}

TEST(UsageErrors, ABadValueNamesTheOptionItsUnitAndRange) {
  for (const UsageCase& usage : std::vector<UsageCase>{
           {{"watch", "-i", "abc"},
            "gpumem watch: --interval abc: not a number of seconds (0.01 to 86400)\n"},
           {{"watch", "--interval", "0"},
            "gpumem watch: --interval 0: out of range (seconds: 0.01 to 86400)\n"},
           {{"watch", "--count", "1.5"},
            "gpumem watch: --count 1.5: not a whole number of refreshes (0 or more)\n"},
           {{"list", "--width", "10"},
            "gpumem list: --width 10: out of range (columns: 40 to 100000)\n"},
           {{"run", "--interval", "fast", "--", "true"},
            "gpumem run: --interval fast: not a number of seconds (0.001 to 3600)\n"},
           {{"run", "-d", "x", "--", "true"},
            "gpumem run: --device x: not a CUDA device ordinal (0 or more)\n"},
           {{"run", "--mode", "psychic", "--", "true"},
            "gpumem run: --mode psychic: not one of exact|sampled|auto\n"},
           {{"attribution", "--top", "0", "doc.json"},
            "gpumem attribution: --top 0: out of range (stacks: 1 to 1000000)\n"},
           {{"serve", "--max-connections", "0"},
            "gpumem serve: --max-connections 0: out of range (connections: 1 to 65536)\n"},
           {{"completion", "tcsh"},
            "gpumem completion: shell tcsh: not one of bash|zsh|fish|man\n"},
       }) {
    expect_usage_error(usage);
  }
}

TEST(UsageErrors, HelpShowsTheEnumWordsAndOneUsageLine) {
  for (const char* command : {"list", "watch", "run", "report", "attribution", "serve"}) {
    const CommandResult help = run_command({gpumem_binary(), command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    std::size_t usages = 0;
    for (std::size_t at = help.out.find("Usage:"); at != std::string::npos;
         at = help.out.find("Usage:", at + 1)) {
      ++usages;
    }
    EXPECT_EQ(usages, 1u) << help.out;
    EXPECT_EQ(help.out.find("ENUM"), std::string::npos) << help.out;
  }
  const CommandResult run = run_command({gpumem_binary(), "run", "--help"});
  EXPECT_NE(run.out.find("Usage: gpumem run [OPTIONS] -- COMMAND [ARGS...]\n"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  -m,--mode exact|sampled|auto\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("  -i,--interval SECONDS "), std::string::npos) << run.out;
  const CommandResult watch = run_command({gpumem_binary(), "watch", "--help"});
  EXPECT_NE(watch.out.find("  -n,--count REFRESHES "), std::string::npos) << watch.out;
}

// Issue 31: `gpumem run --help` wrote each description on one line, which an 80-column terminal
// broke wherever the width fell ("Ev|ery"). Descriptions are wrapped at spaces to the width, in
// their column, and no word is lost or broken.
TEST(UsageErrors, HelpWrapsDescriptionsAtSpacesToTheWidth) {
  const auto words = [](const std::string& text) {
    std::vector<std::string> all;
    std::istringstream in(text);
    for (std::string word; in >> word;) all.push_back(word);
    return all;
  };
  ::setenv("COLUMNS", "200", 1);
  const CommandResult wide = run_command({gpumem_binary(), "run", "--help"});
  for (const char* columns : {"80", "60"}) {
    ::setenv("COLUMNS", columns, 1);
    for (const char* command : {"run", "serve", "report", "diff", "attribution"}) {
      const CommandResult help = run_command({gpumem_binary(), command, "--help"});
      ASSERT_EQ(help.exit_code, 0) << command;
      std::istringstream lines(help.out);
      for (std::string line; std::getline(lines, line);) {
        // The usage line is never cut; everything else fits.
        if (line.rfind("Usage:", 0) == 0) continue;
        std::size_t shown = 0;  // columns: UTF-8's continuation bytes take none
        for (unsigned char byte : line) shown += (byte & 0xC0) != 0x80;
        EXPECT_LE(shown, std::stoul(columns)) << command << " at " << columns << ":\n" << line;
      }
      if (std::string(command) == "run") {
        EXPECT_EQ(words(help.out), words(wide.out)) << help.out;
      }
    }
  }
  ::unsetenv("COLUMNS");
  ::setenv("COLUMNS", "80", 1);
  const CommandResult run = run_command({gpumem_binary(), "run", "--help"});
  EXPECT_NE(run.out.find(
                "                              {local_rank} and {pid} are replaced. Every output\n"
                "                              is a regular file (new or replaced) or '-'\n"),
            std::string::npos)
      << run.out;
  ::unsetenv("COLUMNS");
}

std::string written_completion(const std::string& kind) {
  const CommandResult result = run_command({gpumem_binary(), "completion", kind});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const std::string path = temporary_folder() + "/gpumem." + kind;
  std::ofstream(path) << result.out;
  return path;
}

// What the bash completion offers for `words` (the last one being completed).
std::string bash_completes(const std::string& script, const std::string& words) {
  const CommandResult result = run_command(
      {"bash", "-c",
       "source '" + script + "'; COMP_WORDS=(" + words +
           "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpumem; echo \"${COMPREPLY[*]}\""});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  return result.out;
}

TEST(Completions, TheBashCompletionParsesAndCompletesCommandsOptionsAndWords) {
  const std::string script = written_completion("bash");
  const CommandResult syntax = run_command({"bash", "-n", script});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  EXPECT_EQ(bash_completes(script, "gpumem l"), "list\n");
  EXPECT_EQ(bash_completes(script, "gpumem r"), "run report\n");
  EXPECT_EQ(bash_completes(script, "gpumem --v"), "--version\n");
  EXPECT_EQ(bash_completes(script, "gpumem watch --in"), "--interval\n");
  EXPECT_EQ(bash_completes(script, "gpumem list --json --c"), "--csv\n");  // after a flag
  EXPECT_EQ(bash_completes(script, "gpumem run --mode ''"), "exact sampled auto\n");
  EXPECT_EQ(bash_completes(script, "gpumem run -m s"), "sampled\n");
  EXPECT_EQ(bash_completes(script, "gpumem completion ''"), "bash zsh fish man\n");
  EXPECT_EQ(bash_completes(script, "gpumem run --interval ''"), "\n");  // a number: no guess
}

TEST(Completions, ZshAndFishNameEveryCommandAndOption) {
  for (const char* kind : {"zsh", "fish"}) {
    const std::string text = read_file(written_completion(kind));
    for (const char* name : {"list", "watch", "run", "report", "attribution", "serve", "interval",
                             "wait-descendants", "exact sampled auto"}) {
      EXPECT_NE(text.find(name), std::string::npos) << kind << ": " << name;
    }
  }
  if (have("zsh")) {
    const CommandResult syntax = run_command({"zsh", "-n", written_completion("zsh")});
    EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  }
  if (have("fish")) {
    const CommandResult syntax = run_command({"fish", "--no-execute", written_completion("fish")});
    EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  }
}

TEST(Completions, TheManPageRendersWithoutWarnings) {
  const std::string page = written_completion("man");
  const std::string text = read_file(page);
  for (const char* section : {".SH NAME\n", ".SH SYNOPSIS\n", ".SH OPTIONS\n", ".SH COMMANDS\n",
                              ".SH \"EXIT STATUS\"\n", ".SS run\n"}) {
    EXPECT_NE(text.find(section), std::string::npos) << section;
  }
  if (!have("groff")) GTEST_SKIP() << "no groff";
  const CommandResult rendered = run_command({"groff", "-man", "-Tutf8", "-ww", "-z", page});
  EXPECT_EQ(rendered.exit_code, 0);
  EXPECT_EQ(rendered.err, "");  // no warning
  const CommandResult plain = run_command({"groff", "-man", "-Tascii", "-P-cbou", page});
  EXPECT_NE(plain.out.find("gpumem run [OPTIONS] -- COMMAND [ARGS...]"), std::string::npos)
      << plain.out;
  EXPECT_NE(plain.out.find("-m, --mode exact|sampled|auto"), std::string::npos) << plain.out;
}

}  // namespace
}  // namespace gpumem::testing
