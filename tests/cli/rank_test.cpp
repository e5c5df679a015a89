// Ranks from environments (launchers' variables, /proc/<pid>/environ) and per-node file names.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gpumem/internal/run_rank.hpp"
#include "path_template.hpp"
#include "run/rank_tracker.hpp"

namespace gpumem::cli {
namespace {

using namespace gpumem::run;

using namespace std::string_literals;

std::string block(const std::vector<std::string>& entries) {
  std::string out;
  for (const std::string& entry : entries) out += entry + '\0';
  return out;
}

TEST(Rank, TorchrunsVariablesBeatTheSlurmOnesItsWorkersInherit) {
  const RankInfo info = rank_from_environment_block(
      block({"SLURM_PROCID=1", "SLURM_LOCALID=0", "RANK=9", "LOCAL_RANK=3", "WORLD_SIZE=16"}));
  EXPECT_EQ(info.rank, 9);
  EXPECT_EQ(info.local_rank, 3);
  EXPECT_EQ(info.rank_variable, "RANK");
  EXPECT_EQ(info.local_variable, "LOCAL_RANK");
}

TEST(Rank, EachLaunchersVariablesAreRead) {
  struct Case {
    std::vector<std::string> environment;
    int rank;
    int local_rank;
  };
  for (const Case& c : std::vector<Case>{
           {{"SLURM_PROCID=5", "SLURM_LOCALID=1"}, 5, 1},
           {{"OMPI_COMM_WORLD_RANK=6", "OMPI_COMM_WORLD_LOCAL_RANK=2", "SLURM_PROCID=0"}, 6, 2},
           {{"PMI_RANK=7", "MPI_LOCALRANKID=3"}, 7, 3},
           {{"PMIX_RANK=8", "SLURM_LOCALID=0"}, 8, 0},
       }) {
    const RankInfo info = rank_from_environment_block(block(c.environment));
    EXPECT_EQ(info.rank, c.rank) << c.environment[0];
    EXPECT_EQ(info.local_rank, c.local_rank) << c.environment[0];
  }
}

TEST(Rank, OddEntriesAreSkippedAndTheFirstOfANameCounts) {
  const std::string odd = "\xff\xfe=\x80"s + '\0' + "no-equals-sign"s + '\0' + "=5"s + '\0' +
                          "RANK=+1"s + '\0' + "RANK=2"s + '\0' + "LOCAL_RANK= 1"s + '\0' +
                          "SLURM_LOCALID=4"s + '\0' + "SLURM_PROCID=99999999999"s + '\0' +
                          "SLURM_LOCALID=6"s;
  const RankInfo info = rank_from_environment_block(odd);
  // "RANK=+1" is the first RANK and is no plain number: the rank comes from no other RANK entry
  // (getenv would answer "+1") and none of the others is set validly.
  EXPECT_FALSE(info.rank.has_value());
  EXPECT_EQ(info.local_rank, 4);  // LOCAL_RANK=" 1" is not a number either
  EXPECT_EQ(info.local_variable, "SLURM_LOCALID");
  EXPECT_FALSE(rank_from_environment_block("").known());
  EXPECT_FALSE(rank_from_environment_block(block({"PATH=/bin", "HOME=/root"})).known());
  // Not NUL-terminated at the end, as a truncated read would leave it.
  EXPECT_EQ(rank_from_environment_block("HOME=/\0RANK=12"s).rank, 12);
}

// A child started with `environment` exactly, sleeping until killed.
pid_t start_sleeper(const std::vector<std::string>& environment) {
  std::vector<char*> envp;
  for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  char sleep_path[] = "/bin/sleep";
  char seconds[] = "30";
  char* argv[] = {sleep_path, seconds, nullptr};
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, sleep_path, nullptr, nullptr, argv, envp.data()), 0);
  return pid;
}

TEST(Rank, AProcessRankIsReadFromItsEnvironmentFile) {
  const pid_t pid = start_sleeper({"\xff\xfe=\x80", "garbage", "RANK=7", "LOCAL_RANK=x",
                                   "SLURM_LOCALID=2", std::string(100000, 'A') + "=long"});
  ASSERT_GT(pid, 0);
  RankInfo info;
  // The environment file is there once the child has exec'ed.
  for (int attempt = 0; attempt < 500 && !info.known(); ++attempt) {
    info = process_rank(pid);
    if (!info.known()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(info.rank, 7);
  EXPECT_EQ(info.local_rank, 2);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // Gone: no rank, no error.
  EXPECT_FALSE(process_rank(pid).known());
  EXPECT_FALSE(process_rank(-1).known());
}

// Waits until a started child's environment file shows its rank (it has exec'ed).
void wait_for_rank(pid_t pid) {
  for (int attempt = 0; attempt < 500 && !process_rank(pid).known(); ++attempt)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

TEST(RankTracker, ARanksPeakIsTheHighestSumAtASampleNotTheSumOfPeaks) {
  // A worker of rank 3 and its child, both on GPU 0; a process of rank 1; one without a rank.
  const pid_t worker = start_sleeper({"RANK=3", "LOCAL_RANK=1"});
  const pid_t child = start_sleeper({"RANK=3"});
  const pid_t other = start_sleeper({"SLURM_PROCID=1"});
  const pid_t plain = start_sleeper({"PATH=/bin"});
  for (pid_t pid : {worker, child, other}) wait_for_rank(pid);
  RankTracker tracker;
  EXPECT_EQ(tracker.observe(worker, 0, 100).rank, 3);
  tracker.observe(child, 0, 50);
  tracker.observe(other, 1, 7);
  EXPECT_FALSE(tracker.observe(plain, 0, 1000).known());
  tracker.end_sample(0.1);
  tracker.observe(worker, 0, 10);
  tracker.observe(child, 0, 120);
  tracker.observe(worker, 1, 40);
  tracker.end_sample(0.2);
  const std::vector<RankPeaks> ranks = tracker.ranks();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].info.rank, 1);
  ASSERT_EQ(ranks[0].devices.size(), 1u);
  EXPECT_EQ(ranks[0].devices[0].peak, 7);
  EXPECT_EQ(ranks[1].info.rank, 3);
  EXPECT_EQ(ranks[1].info.local_rank, 1);
  EXPECT_EQ(ranks[1].pids,
            (std::vector<unsigned>{static_cast<unsigned>(worker), static_cast<unsigned>(child)}));
  ASSERT_EQ(ranks[1].devices.size(), 2u);
  EXPECT_EQ(ranks[1].devices[0].device, 0);
  EXPECT_EQ(ranks[1].devices[0].peak, 150);  // 100 + 50 at 0.1 s, not 100 + 120
  EXPECT_DOUBLE_EQ(ranks[1].devices[0].peak_time_s, 0.1);
  EXPECT_EQ(ranks[1].devices[1].peak, 40);
  for (pid_t pid : {worker, child, other, plain}) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

TEST(Rank, TheHostNameIsThisMachines) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(host_name(), std::string(name));
}

TEST(PathTemplate, PlaceholdersAreReplaced) {
  const PathValues values{"node-a", 3, 1, 4242};
  std::string error;
  EXPECT_EQ(expand_path("run-{host}-{rank}.json", values, &error), "run-node-a-3.json");
  EXPECT_EQ(expand_path("out/{local_rank}/{pid}.svg", values, &error), "out/1/4242.svg");
  EXPECT_EQ(expand_path("plain.json", values, &error), "plain.json");
  EXPECT_EQ(expand_path("{{x}}-{rank}", values, &error), "{x}-3");
  EXPECT_EQ(expand_path("", values, &error), "");
  // A host name never makes a folder.
  EXPECT_EQ(expand_path("{host}.json", {"a/b", 0, 0, 1}, &error), "a_b.json");
}

TEST(PathTemplate, MistakesAreClearErrors) {
  const PathValues values{"node-a", 3, std::nullopt, 4242};
  std::string error;
  EXPECT_FALSE(expand_path("run-{node}.json", values, &error));
  EXPECT_EQ(error,
            "'run-{node}.json': unknown placeholder {node} (known: {host}, {rank}, {local_rank}, "
            "{pid})");
  EXPECT_FALSE(expand_path("run-{rank.json", values, &error));
  EXPECT_NE(error.find("a '{' without its '}'"), std::string::npos) << error;
  EXPECT_FALSE(expand_path("run-}.json", values, &error));
  EXPECT_NE(error.find("a '}' without its '{'"), std::string::npos) << error;
  EXPECT_FALSE(expand_path("run-{local_rank}.json", values, &error));
  EXPECT_NE(error.find("names no local rank (LOCAL_RANK"), std::string::npos) << error;
  EXPECT_FALSE(expand_path("run-{rank}.json", {"node-a", std::nullopt, 0, 1}, &error));
  EXPECT_NE(error.find("names no rank (RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, "
                       "SLURM_PROCID)"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace gpumem::cli
