// `gpumem run` as a shell would run the command: exit status, signals, commands that cannot run.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(RunProcess, ExitStatusIsTheCommands) {
  SimGpu gpu;
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--", sim_tool(), "workload", "spike 1MiB 1ms; exit 7"});
  EXPECT_EQ(result.exit_code, 7) << result.err;
  EXPECT_NE(result.err.find("exit status 7"), std::string::npos) << result.err;
}

TEST(RunProcess, CommandOutputAndArgumentsPassThroughUntouched) {
  SimGpu gpu;
  const CommandResult result =
      run_command({gpumem_binary(), "run", "printf", "%s|", "-a", "--json", "b c"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "-a|--json|b c|");
}

TEST(RunProcess, OnlyTheSeparatorBeforeTheCommandIsGpumems) {
  SimGpu gpu;
  const std::string json = temporary_folder() + "/summary.json";
  CommandResult result = run_command(
      {gpumem_binary(), "run", "--json", json, "-i", "0.005", "--", "printf", "%s|", "--", "x"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "--|x|");
  result = run_command({gpumem_binary(), "run", "--mode=sampled", "printf", "%s|", "--", "x"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "--|x|");
}

TEST(RunProcess, ACommandKilledByASignalGives128PlusItsNumber) {
  SimGpu gpu;
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--json", json, "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(result.exit_code, 128 + SIGTERM);
  EXPECT_NE(result.err.find("killed by SIGTERM"), std::string::npos) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["exit_code"], 128 + SIGTERM);
  EXPECT_EQ(summary["signal"], "SIGTERM");
}

TEST(RunProcess, SignalsSentToGpumemReachTheCommand) {
  SimGpu gpu;
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) {
    BackgroundCommand run({gpumem_binary(), "run", "--", sim_tool(), "workload",
                           "alloc a 1MiB; print ready; sleep 60s"});
    ASSERT_TRUE(run.wait_for_output("ready"));
    ASSERT_EQ(::kill(run.pid(), signal), 0);
    const CommandResult result = run.wait();
    EXPECT_EQ(result.exit_code, 128 + signal) << result.err;
    EXPECT_NE(result.err.find("killed by SIG"), std::string::npos) << result.err;
  }
}

TEST(RunProcess, CtrlCToTheProcessGroupStopsTheCommand) {
  SimGpu gpu;
  BackgroundCommand run(
      {gpumem_binary(), "run", "--", sim_tool(), "workload", "print ready; sleep 60s"});
  ASSERT_TRUE(run.wait_for_output("ready"));
  ASSERT_EQ(::kill(-run.pid(), SIGINT), 0);  // what a terminal does
  const CommandResult result = run.wait();
  EXPECT_EQ(result.exit_code, 128 + SIGINT) << result.err;
}

TEST(RunProcess, ACommandNotFoundGives127) {
  SimGpu gpu;
  const CommandResult result = run_command({gpumem_binary(), "run", "--", "no-such-command-xyz"});
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_EQ(result.err, "gpumem run: no-such-command-xyz: command not found\n");
}

TEST(RunProcess, ACommandNotExecutableGives126) {
  SimGpu gpu;
  const std::string script = temporary_folder() + "/script.sh";
  { std::ofstream(script) << "#!/bin/sh\necho hi\n"; }
  std::filesystem::permissions(script, std::filesystem::perms::owner_read);
  const CommandResult result = run_command({gpumem_binary(), "run", "--", script});
  EXPECT_EQ(result.exit_code, 126);
  EXPECT_EQ(lines(result.err), 1u) << result.err;
}

TEST(RunProcess, BadUsageIsOneLineAndStatus2) {
  SimGpu gpu;
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {gpumem_binary(), "run", "--interval", "fast", "--", "true"},
           {gpumem_binary(), "run", "--interval", "0", "--", "true"},
           {gpumem_binary(), "run", "--mode", "psychic", "--", "true"},
           {gpumem_binary(), "run", "--no-such-flag", "--", "true"},
           {gpumem_binary(), "frobnicate"},
       }) {
    const CommandResult result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << argv.back() << ": " << result.err;
    EXPECT_EQ(lines(result.err), 1u) << result.err;
    EXPECT_EQ(result.out, "");
  }
  // A missing command: the line that says so, and the usage line.
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {gpumem_binary(), "run"}, {gpumem_binary(), "run", "--"}, {gpumem_binary()}}) {
    const CommandResult result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << argv.back() << ": " << result.err;
    EXPECT_EQ(lines(result.err), 2u) << result.err;
    EXPECT_NE(result.err.find("missing COMMAND\nUsage: gpumem "), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

TEST(RunProcess, HelpAndVersionExitZero) {
  const CommandResult version = run_command({gpumem_binary(), "--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "gpumem 0.1.0\n");
  for (const char* command : {"run", "list", "watch"}) {
    const CommandResult help = run_command({gpumem_binary(), command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find("--help"), std::string::npos) << command;
  }
}

TEST(RunProcess, AnUnwritableOutputStopsBeforeTheCommandRuns) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const std::string marker = folder + "/ran";
  for (const char* option : {"--json", "--timeline", "--plot"}) {
    const CommandResult result = run_command(
        {gpumem_binary(), "run", option, folder + "/missing/out", "--", "touch", marker});
    EXPECT_EQ(result.exit_code, 2) << option;
    EXPECT_EQ(lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find("cannot write"), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << option;
  }
  const CommandResult directory =
      run_command({gpumem_binary(), "run", "--json", folder, "--", "touch", marker});
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(marker));
  // Nothing half-written was left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder),
                          std::filesystem::directory_iterator()),
            0);
}

}  // namespace
}  // namespace gpumem::testing
