// `gpumem run` on jobs as they are launched for real: processes that escape the injection library,
// descendants left running, signals other than the terminal's, runs killed outright.
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

std::string quoted(const std::string& word) {
  return "'" + word + "'";
}

std::string workload(const std::string& script) {
  return quoted(sim_tool()) + " workload " + quoted(script);
}

struct Shell {
  CommandResult result;
  nlohmann::json summary;
  double seconds = 0;
};

Shell run_shell(const std::string& line, std::vector<std::string> options = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = {gpumem_binary(), "run", "--json", json, "-i", "0.005"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", "sh", "-c", line});
  const auto start = std::chrono::steady_clock::now();
  Shell shell{run_command(argv), {}, 0};
  shell.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = read_file(json);
  if (!text.empty()) shell.summary = nlohmann::json::parse(text);
  return shell;
}

// One process counted exactly, one that unset CUDA_INJECTION64_PATH, both holding at once.
const std::string kOneEscapes = workload("alloc a 100MiB; sleep 400ms") +
                                " & (unset CUDA_INJECTION64_PATH; exec " +
                                workload("alloc b 200MiB; sleep 400ms") + ") & wait";

TEST(RunModes, AProcessThatEscapesTheInjectionMakesTheRunMixed) {
  SimGpu gpu;
  const Shell run = run_shell(kOneEscapes);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["mode"], "mixed") << summary.dump(2);
  EXPECT_EQ(summary["exact_processes"], 1);
  EXPECT_EQ(summary["escaped_processes"], 1);
  EXPECT_NE(summary["fallback_reason"].get<std::string>().find("injection library"),
            std::string::npos);
  const auto& device = summary["devices"][0];
  EXPECT_EQ(device["exact_peak_bytes"], 100 * MiB);
  EXPECT_EQ(device["sampled_peak_bytes"], 300 * MiB);
  EXPECT_EQ(device["peak_bytes"], 300 * MiB);  // never below what the processes held
  ASSERT_EQ(summary["processes"].size(), 2u);
  int exact = 0, sampled = 0;
  for (const auto& process : summary["processes"]) {
    if (process["mode"] == "exact") {
      ++exact;
      EXPECT_EQ(process["sampled_peak_bytes"], 100 * MiB);
      EXPECT_TRUE(process["reason"].is_null());
    } else {
      ++sampled;
      EXPECT_EQ(process["sampled_peak_bytes"], 200 * MiB);
      EXPECT_EQ(process["reason"], "did not load the injection library");
    }
  }
  EXPECT_EQ(exact, 1);
  EXPECT_EQ(sampled, 1);
  EXPECT_NE(run.result.err.find("mixed: 1 process measured exactly, 1 process sampled"),
            std::string::npos)
      << run.result.err;
}

TEST(RunModes, ModeExactFailsAfterTheCommandWhenAProcessEscaped) {
  SimGpu gpu;
  const Shell run = run_shell(kOneEscapes + "; exit 3", {"--mode", "exact"});
  EXPECT_EQ(run.result.exit_code, 2) << run.result.err;
  EXPECT_NE(run.result.err.find("exit status 3"), std::string::npos) << run.result.err;
  EXPECT_NE(run.result.err.find("--mode exact: 1 process escaped exact counting"),
            std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("own status was 3"), std::string::npos) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "mixed");
}

TEST(RunModes, WaitsForTheDescendantsTheCommandLeftRunning) {
  SimGpu gpu;
  // The shell exits at once; its workload, adopted by gpumem, allocates afterwards.
  const Shell run = run_shell(workload("sleep 100ms; alloc a 10MiB; sleep 200ms") + " &");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  EXPECT_EQ(run.summary["exact_processes"], 1);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 10 * MiB);
  EXPECT_TRUE(run.summary["descendants_running"].empty());
}

TEST(RunModes, ReportsTheDescendantsStillRunningAtTheBound) {
  SimGpu gpu;
  const Shell run = run_shell(workload("alloc a 10MiB; sleep 5s") + " & sleep 0.2",
                              {"--wait-descendants", "0.3"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["descendants_running"].size(), 1u) << run.summary.dump(2) << run.result.err;
  const int left = run.summary["descendants_running"][0];
  EXPECT_LT(run.seconds, 3.0);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 10 * MiB);
  EXPECT_NE(run.result.err.find("1 descendant of the command still running"), std::string::npos)
      << run.result.err;
  ::kill(left, SIGKILL);

  const Shell opted_out =
      run_shell(workload("alloc a 10MiB; sleep 5s") + " & sleep 0.2", {"--no-wait-descendants"});
  ASSERT_EQ(opted_out.result.exit_code, 0) << opted_out.result.err;
  EXPECT_LT(opted_out.seconds, 3.0);
  // Not waited for, but named: the one still running, and the process NVML showed.
  ASSERT_EQ(opted_out.summary["descendants_running"].size(), 1u) << opted_out.summary.dump(2);
  EXPECT_EQ(opted_out.summary["descendants_waited"], false);
  EXPECT_EQ(opted_out.summary["devices"][0]["peak_bytes"], 10 * MiB);
  ASSERT_EQ(opted_out.summary["processes"].size(), 1u) << opted_out.summary.dump(2);
  EXPECT_EQ(opted_out.summary["processes"][0]["pid"], opted_out.summary["descendants_running"][0]);
  EXPECT_EQ(opted_out.summary["processes"][0]["sampled_peak_bytes"], 10 * MiB);
  ::kill(opted_out.summary["descendants_running"][0].get<int>(), SIGKILL);
}

// --no-wait-descendants: a descendant that allocates after the command exited (1.5 s after:
// long after gpumem stopped, however loaded the machine) is not counted, and the summary says so
// rather than passing 0 B for the whole story.
TEST(RunModes, DescendantsNotWaitedForAreNamedAndTheFigureSaysWhereItStops) {
  SimGpu gpu;
  const Shell run = run_shell(workload("sleep 1500ms; alloc a 10MiB; sleep 1500ms") + " &",
                              {"--no-wait-descendants"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_LT(run.seconds, 2.5);  // waited for, it would last 3 s
  ASSERT_EQ(run.summary["descendants_running"].size(), 1u) << run.summary.dump(2) << run.result.err;
  const int left = run.summary["descendants_running"][0];
  EXPECT_EQ(run.summary["descendants_waited"], false);
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 0);  // nothing allocated until then
  EXPECT_NE(run.result.err.find("gpumem: 1 descendant of the command still running when it "
                                "exited, not waited for (--no-wait-descendants) (pid " +
                                std::to_string(left) +
                                "): the figures above stop at the command's exit; what it "
                                "allocated after that is not counted, so the peak may be higher"),
            std::string::npos)
      << run.result.err;
  EXPECT_EQ(::kill(left, 0), 0);  // it was left running, as asked
  ::kill(left, SIGKILL);

  // Waited for, the same command's peak is counted.
  const Shell waited = run_shell(workload("sleep 300ms; alloc a 10MiB; sleep 100ms") + " &");
  ASSERT_EQ(waited.result.exit_code, 0) << waited.result.err;
  EXPECT_EQ(waited.summary["descendants_waited"], true);
  EXPECT_TRUE(waited.summary["descendants_running"].empty());
  EXPECT_EQ(waited.summary["devices"][0]["peak_bytes"], 10 * MiB);
}

TEST(RunModes, TheMonitorAddsTheContextsToTheExactSpikes) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const Shell run =
      run_shell(workload("alloc a 100MiB; sleep 150ms; spike 50MiB 1ms; sleep 150ms"));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& device = run.summary["devices"][0];
  EXPECT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  EXPECT_EQ(device["exact_peak_bytes"], 150 * MiB);  // the events alone
  // A sample may catch the spike too, on a loaded machine.
  EXPECT_GE(device["sampled_peak_bytes"], 600 * MiB);
  EXPECT_LE(device["sampled_peak_bytes"], 650 * MiB);
  EXPECT_EQ(device["context_bytes"], 500 * MiB);
  EXPECT_EQ(device["peak_bytes"], 650 * MiB);  // the spike, on top of the context
}

// A spike just before the process exits: no sample sees the process again, but the peak stood
// on its context (it gave its slot back after the spike). Was 600 MiB, the events' 150 MiB
// without the context.
TEST(RunModes, ASpikeRightBeforeExitStandsOnItsContext) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const Shell run = run_shell(workload("alloc a 100MiB; sleep 100ms; spike 50MiB 1ms; free a"));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& device = run.summary["devices"][0];
  EXPECT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  EXPECT_EQ(device["exact_peak_bytes"], 150 * MiB);
  EXPECT_EQ(device["context_bytes"], 500 * MiB);
  EXPECT_EQ(device["peak_bytes"], 650 * MiB) << device.dump(2);
}

// A process that allocates and frees at once, before any sample saw it: its spike stood on its
// context, which the monitor learns only afterwards.
TEST(RunModes, ASpikeBeforeTheFirstSampleStandsOnItsContext) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const Shell run = run_shell(workload("alloc a 100MiB; free a; sleep 150ms"));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& device = run.summary["devices"][0];
  EXPECT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  EXPECT_EQ(device["exact_peak_bytes"], 100 * MiB);
  EXPECT_EQ(device["context_bytes"], 500 * MiB);
  EXPECT_EQ(device["peak_bytes"], 600 * MiB) << device.dump(2);
}

// The pids of gpumem's children (the command).
std::vector<int> children_of(pid_t parent) {
  std::vector<int> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(entry.path().string() + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
      children.push_back(std::stoi(name));
  }
  return children;
}

TEST(RunModes, AMeasuredProcessLoadsNoNvml) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  BackgroundCommand run({gpumem_binary(), "run", "--", sim_tool(), "workload",
                         "alloc a 1MiB; print ready; sleep 60s"});
  ASSERT_TRUE(run.wait_for_output("ready"));
  const std::vector<int> children = children_of(run.pid());
  ASSERT_EQ(children.size(), 1u);
  const std::string maps = read_file("/proc/" + std::to_string(children[0]) + "/maps");
  EXPECT_NE(maps.find("libgpumem_inject"), std::string::npos);
  EXPECT_NE(maps.find("libcuda"), std::string::npos);
  EXPECT_EQ(maps.find("libnvidia-ml"), std::string::npos);
  ::kill(run.pid(), SIGTERM);
  EXPECT_EQ(run.wait().exit_code, 128 + SIGTERM);
}

class PrivateTmpdir {
 public:
  PrivateTmpdir() : folder_(temporary_folder()) { ::setenv("TMPDIR", folder_.c_str(), 1); }
  ~PrivateTmpdir() { ::unsetenv("TMPDIR"); }
  // gpumem's counters files in it (the test's own output files land here too).
  std::size_t files() const {
    std::size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder_))
      count += entry.path().filename().string().rfind("gpumem-run-", 0) == 0 ? 1 : 0;
    return count;
  }

 private:
  std::string folder_;
};

TEST(RunModes, EveryCatchableSignalReachesTheCommandAndNothingIsLeftBehind) {
  SimGpu gpu;
  PrivateTmpdir tmpdir;
  for (int signal : {SIGUSR1, SIGUSR2, SIGALRM}) {
    BackgroundCommand run({gpumem_binary(), "run", "--", sim_tool(), "workload",
                           "alloc a 1MiB; print ready; sleep 60s"});
    ASSERT_TRUE(run.wait_for_output("ready"));
    EXPECT_EQ(tmpdir.files(), 0u);  // the counters live in a memory file, not in TMPDIR
    ASSERT_EQ(::kill(run.pid(), signal), 0);
    const CommandResult result = run.wait();
    EXPECT_EQ(result.exit_code, 128 + signal) << result.err;
    EXPECT_NE(result.err.find("killed by SIG"), std::string::npos) << result.err;
    EXPECT_EQ(tmpdir.files(), 0u);
  }
}

TEST(RunModes, ACountersFileLeftByAKilledRunIsRemovedByTheNext) {
  SimGpu gpu;
  PrivateTmpdir tmpdir;
  {
    BackgroundCommand run(
        {gpumem_binary(), "run", "--", sim_tool(), "workload", "print ready; sleep 60s"});
    ASSERT_TRUE(run.wait_for_output("ready"));
    ASSERT_EQ(::kill(-run.pid(), SIGKILL), 0);  // gpumem and its command, no cleanup possible
    run.wait();
  }
  EXPECT_EQ(tmpdir.files(), 0u);  // a memory file goes with its last user
  // A file that a killed run of an older gpumem left in TMPDIR (its pid runs no more).
  std::ofstream(std::string(std::getenv("TMPDIR")) + "/gpumem-run-999999999-Ab12Cd") << "";
  EXPECT_EQ(tmpdir.files(), 1u);
  const CommandResult next = run_command({gpumem_binary(), "run", "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(tmpdir.files(), 0u);
}

// A command that handles the signals a job's owner sends carries on, and so does gpumem: each
// signal sent to gpumem alone reaches the command once, and the run ends with the command.
TEST(RunModes, HandledSignalsReachTheCommandOnceAndGpumemCarriesOn) {
  SimGpu gpu;
  PrivateTmpdir tmpdir;
  const std::string go = temporary_folder() + "/go";
  const std::string script =
      "for s in USR1 USR2 HUP WINCH INT TERM ALRM; do trap \"echo got $s\" $s; done; "
      "echo ready; while [ ! -e " +
      quoted(go) + " ]; do sleep 0.01; done; echo done";
  BackgroundCommand run({gpumem_binary(), "run", "--", "sh", "-c", script});
  ASSERT_TRUE(run.wait_for_output("ready"));
  for (const char* name : {"USR1", "USR2", "HUP", "WINCH", "INT", "TERM", "ALRM"}) {
    const int signal = name == std::string("USR1")    ? SIGUSR1
                       : name == std::string("USR2")  ? SIGUSR2
                       : name == std::string("HUP")   ? SIGHUP
                       : name == std::string("WINCH") ? SIGWINCH
                       : name == std::string("INT")   ? SIGINT
                       : name == std::string("TERM")  ? SIGTERM
                                                      : SIGALRM;
    ASSERT_EQ(::kill(run.pid(), signal), 0);
    EXPECT_TRUE(run.wait_for_output(std::string("got ") + name, std::chrono::seconds(10))) << name;
  }
  EXPECT_EQ(::kill(run.pid(), 0), 0);  // gpumem still runs
  { std::ofstream(go) << ""; }
  const CommandResult result = run.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* name : {"USR1", "USR2", "HUP", "WINCH", "INT", "TERM", "ALRM"}) {
    const std::string line = std::string("got ") + name + "\n";
    const std::size_t first = result.out.find(line);
    EXPECT_NE(first, std::string::npos) << result.out;
    EXPECT_EQ(result.out.find(line, first + 1), std::string::npos) << "twice: " << result.out;
  }
  EXPECT_NE(result.out.find("done"), std::string::npos);
  EXPECT_EQ(tmpdir.files(), 0u);
}

// A summary must be written whatever bytes the command line holds; a crash there would also
// leave the counters file behind.
TEST(RunModes, ACommandLineThatIsNotUtf8StillGetsItsSummary) {
  SimGpu gpu;
  PrivateTmpdir tmpdir;
  const std::string json = temporary_folder() + "/summary.json";
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--json", json, "--", "sh", "-c", "exit 4", "\xff\xfe"});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["exit_code"], 4);
  EXPECT_EQ(summary["command"].size(), 4u);
  EXPECT_EQ(tmpdir.files(), 0u);
}

// A folder shared between containers holds the files of runs in other pid namespaces, whose pids
// say nothing here: only this namespace's dead runs are cleaned.
TEST(RunModes, ACountersFileOfAnotherPidNamespaceIsLeftAlone) {
  SimGpu gpu;
  PrivateTmpdir tmpdir;
  const std::string folder = std::getenv("TMPDIR");
  struct stat own {};
  ASSERT_EQ(::stat("/proc/self/ns/pid", &own), 0);
  // 4194304 is beyond any pid: no such process runs, in any namespace.
  const std::string dead_here =
      folder + "/gpumem-run-4194304-ns" + std::to_string(own.st_ino) + "-aaaaaa";
  const std::string dead_before_namespaces = folder + "/gpumem-run-4194304-bbbbbb";
  const std::string elsewhere =
      folder + "/gpumem-run-4194304-ns" + std::to_string(own.st_ino + 1) + "-cccccc";
  for (const std::string& path : {dead_here, dead_before_namespaces, elsewhere})
    std::ofstream(path) << "x";
  const CommandResult next = run_command({gpumem_binary(), "run", "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(std::filesystem::exists(dead_here));
  EXPECT_FALSE(std::filesystem::exists(dead_before_namespaces));
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
}

}  // namespace
}  // namespace gpumem::testing
