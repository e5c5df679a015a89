// `gpumem run` around a launcher: each worker reported by its rank, per-node file names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command_runner.hpp"
#include "cli/launchers.hpp"
#include "gpumem/internal/run_rank.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

// A worker that holds (RANK + 1) * STEP MiB (more for the ranks in `extra`) long enough for
// several samples; `select` picks its device ("device $LOCAL_RANK;" or nothing).
std::string worker(int step_mib, const std::string& select = "") {
  return "exec '" + sim_tool() + "' workload \"" + select + "alloc w $(( (RANK + 1) * " +
         std::to_string(step_mib) + " ))MiB; sleep 400ms\"";
}

struct RunOutcome {
  CommandResult result;
  nlohmann::json summary;
};

RunOutcome run_with_json(const std::vector<std::string>& prefix,
                         const std::vector<std::string>& command,
                         std::vector<std::string> options = {}) {
  const std::string json = temporary_folder() + "/summary.json";
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(), {gpumem_binary(), "run", "--json", json, "-i", "0.005"});
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  RunOutcome run{run_command(argv), {}};
  const std::string text = read_file(json);
  if (!text.empty()) run.summary = nlohmann::json::parse(text);
  return run;
}

const nlohmann::json* rank_entry(const nlohmann::json& summary, int rank) {
  for (const auto& entry : summary["ranks"]) {
    if (entry["rank"] == rank) return &entry;
  }
  return nullptr;
}

// Like `torchrun --nproc-per-node 2` on a node whose workers each get their own GPU through
// CUDA_VISIBLE_DEVICES (the monitor sees both).
TEST(RunRanks, EachWorkerOfALauncherIsReportedByItsRankAndDevice) {
  SimGpu gpu;
  const RunOutcome run = run_with_json(
      {"env", "-u", "RANK", "-u", "SLURM_PROCID"},
      {launcher("fake-torchrun"), "--nproc-per-node", "2", "--gpus", "2", "sh", "-c", worker(100)});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& summary = run.summary;
  EXPECT_EQ(summary["host"], run::host_name());
  EXPECT_TRUE(summary["gpumem_rank"].is_null());
  ASSERT_EQ(summary["ranks"].size(), 2u) << summary.dump(2);
  // CUDA_VISIBLE_DEVICES=0 is the first device in CUDA's order, the H200 (NVML index 1); =1 the
  // A100 (NVML index 0): each is gpumem's ordinal of the same number.
  const struct {
    int rank;
    std::int64_t bytes;
    int device;
    const char* uuid;
  } expected[] = {{0, 100 * MiB, 0, "GPU-bbbbbbbb-2222-4000-8000-000000000001"},
                  {1, 200 * MiB, 1, "GPU-aaaaaaaa-1111-4000-8000-000000000000"}};
  for (const auto& want : expected) {
    const nlohmann::json* entry = rank_entry(summary, want.rank);
    ASSERT_NE(entry, nullptr) << want.rank << summary.dump(2);
    EXPECT_EQ((*entry)["local_rank"], want.rank);
    EXPECT_EQ((*entry)["peak_bytes"], want.bytes) << entry->dump();
    EXPECT_EQ((*entry)["device"], want.device) << entry->dump();
    EXPECT_EQ((*entry)["uuid"], want.uuid) << entry->dump();
    ASSERT_EQ((*entry)["pids"].size(), 1u);
    ASSERT_EQ((*entry)["devices"].size(), 1u);
  }
  ASSERT_EQ(summary["processes"].size(), 2u);
  for (const auto& process : summary["processes"]) {
    const nlohmann::json* entry = rank_entry(summary, process["rank"].get<int>());
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ((*entry)["pids"][0], process["pid"]);
    EXPECT_EQ(process["local_rank"], process["rank"]);
    EXPECT_EQ(process["device"], (*entry)["device"]);
  }
  EXPECT_NE(
      run.result.err.find(
          "gpumem: rank 0 (local 0): peak 100.0 MiB process footprint on GPU 0 (NVIDIA H200)"),
      std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("gpumem: rank 1 (local 1): peak 200.0 MiB process footprint on GPU "
                                "1 (NVIDIA A100-SXM4-40GB)"),
            std::string::npos)
      << run.result.err;
}

// Four workers on two GPUs: each GPU holds two ranks, and each rank's own peak is still its own.
TEST(RunRanks, RanksSharingAGpuKeepTheirOwnPeaks) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const std::string json = folder + "/summary.json", release = folder + "/release";
  // Each worker holds its memory until the test has seen all four holding.
  const std::string held = "exec '" + sim_tool() +
                           "' workload \"alloc w $(( (RANK + 1) * 50 ))MiB; print ready$RANK; "
                           "wait_for " +
                           release + "\"";
  BackgroundCommand run({gpumem_binary(), "run", "--json", json, "-i", "0.005", "--",
                         launcher("fake-torchrun"), "--nnodes", "2", "--node-rank", "1",
                         "--nproc-per-node", "4", "--gpus", "2", "sh", "-c", held});
  for (int rank = 4; rank < 8; ++rank)
    ASSERT_TRUE(run.wait_for_output("ready" + std::to_string(rank)));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // samples of all four at once
  { std::ofstream(release) << ""; }
  const CommandResult result = run.wait();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(summary["ranks"].size(), 4u) << summary.dump(2);
  for (int local = 0; local < 4; ++local) {
    const int rank = 4 + local;  // the second node's
    const nlohmann::json* entry = rank_entry(summary, rank);
    ASSERT_NE(entry, nullptr) << rank;
    EXPECT_EQ((*entry)["local_rank"], local);
    EXPECT_EQ((*entry)["peak_bytes"], (rank + 1) * 50 * MiB) << entry->dump();
    EXPECT_EQ((*entry)["device"], local % 2) << entry->dump();
    EXPECT_EQ((*entry)["measured"], "sampled") << entry->dump();  // it shares its GPU
  }
  // The GPUs held both of their ranks at once: 250 + 350 and 300 + 400 MiB.
  EXPECT_EQ(summary["devices"][0]["peak_bytes"], 600 * MiB);
  EXPECT_EQ(summary["devices"][1]["peak_bytes"], 700 * MiB);
}

// Where the workers keep gpumem's device view and pick their GPU themselves (as torchrun's do,
// with torch.cuda.set_device(LOCAL_RANK)), each is counted exactly: a 1 ms spike no 5 ms sample
// can be relied on to see is in its rank's peak.
TEST(RunRanks, AWorkerAloneOnItsGpuHasItsExactPeak) {
  SimGpu gpu;
  const std::string spiky = "exec '" + sim_tool() +
                            "' workload \"device $LOCAL_RANK; alloc w $(( (RANK + 1) * 100 ))MiB; "
                            "sleep 200ms; spike 64MiB 1ms; sleep 200ms\"";
  const RunOutcome run =
      run_with_json({}, {launcher("fake-torchrun"), "--nproc-per-node", "2", "sh", "-c", spiky});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["mode"], "exact") << run.summary.dump(2);
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json* entry = rank_entry(run.summary, rank);
    ASSERT_NE(entry, nullptr) << rank;
    EXPECT_EQ((*entry)["measured"], "exact") << entry->dump();
    EXPECT_EQ((*entry)["peak_bytes"], ((rank + 1) * 100 + 64) * MiB) << entry->dump();
    EXPECT_EQ((*entry)["device"], rank);
  }
  EXPECT_NE(run.result.err.find("rank 1 (local 1): peak 264.0 MiB process footprint on GPU 1 "
                                "(NVIDIA A100-SXM4-40GB), exact"),
            std::string::npos)
      << run.result.err;
}

TEST(RunRanks, ARankOnTwoGpusHasItsPeakOnEach) {
  SimGpu gpu;
  const RunOutcome run = run_with_json(
      {"env", "RANK=5", "LOCAL_RANK=0"},
      {sim_tool(), "workload", "alloc a 10MiB; device 1; alloc b 30MiB; sleep 200ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["ranks"].size(), 1u) << run.summary.dump(2);
  const auto& rank = run.summary["ranks"][0];
  EXPECT_EQ(rank["rank"], 5);
  EXPECT_EQ(rank["peak_bytes"], 30 * MiB);
  EXPECT_EQ(rank["device"], 1);
  ASSERT_EQ(rank["devices"].size(), 2u);
  EXPECT_EQ(rank["devices"][0]["device"], 0);
  EXPECT_EQ(rank["devices"][0]["peak_bytes"], 10 * MiB);
  EXPECT_EQ(rank["devices"][1]["peak_bytes"], 30 * MiB);
  EXPECT_NE(run.result.err.find("rank 5 (local 0): peak 30.0 MiB process footprint on GPU 1 "
                                "(NVIDIA A100-SXM4-40GB), exact, 2 GPUs used"),
            std::string::npos)
      << run.result.err;
}

TEST(RunRanks, ACommandWithoutRanksHasNoRankTable) {
  SimGpu gpu;
  const RunOutcome run =
      run_with_json({"env", "-u", "RANK", "-u", "LOCAL_RANK", "-u", "SLURM_PROCID"},
                    {sim_tool(), "workload", "alloc a 10MiB; sleep 50ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_TRUE(run.summary["ranks"].empty());
  EXPECT_TRUE(run.summary["processes"][0]["rank"].is_null());
  EXPECT_EQ(run.result.err.find("gpumem: rank"), std::string::npos) << run.result.err;
}

// Under srun each node's gpumem has the task's rank in its environment: one file per node.
TEST(RunRanks, PerNodeFileNamesComeFromTheHostAndGpumemsRank) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const CommandResult result =
      run_command({"env", "SLURM_PROCID=3", "SLURM_LOCALID=1", gpumem_binary(), "run", "--host",
                   "node-c", "--json", folder + "/run-{host}-{rank}.json", "--timeline",
                   folder + "/{rank}-{pid}.csv", "--plot", folder + "/plot-{local_rank}.svg", "--",
                   sim_tool(), "workload", "alloc a 10MiB; sleep 30ms"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string json = folder + "/run-node-c-3.json";
  ASSERT_TRUE(std::filesystem::exists(json)) << result.err;
  EXPECT_TRUE(std::filesystem::exists(folder + "/plot-1.svg"));
  int csv = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    csv += entry.path().filename().string().rfind("3-", 0) == 0 ? 1 : 0;
  EXPECT_EQ(csv, 1);
  const auto summary = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(summary["host"], "node-c");
  EXPECT_EQ(summary["gpumem_rank"]["rank"], 3);
  EXPECT_EQ(summary["gpumem_rank"]["local_rank"], 1);
  EXPECT_EQ(summary["gpumem_rank"]["variable"], "SLURM_PROCID");
  // The command inherited the task's variables: its process is rank 3.
  ASSERT_EQ(summary["ranks"].size(), 1u) << summary.dump(2);
  EXPECT_EQ(summary["ranks"][0]["rank"], 3);
  EXPECT_EQ(summary["ranks"][0]["peak_bytes"], 10 * MiB);
}

TEST(RunRanks, ABadFileNameTemplateStopsBeforeTheCommandRuns) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const std::string marker = folder + "/ran";
  struct Case {
    std::vector<std::string> argv;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"env", "RANK=0", gpumem_binary(), "run", "--json", folder + "/run-{node}.json"},
            "unknown placeholder {node}"},
           {{"env", "-u", "RANK", "-u", "SLURM_PROCID", "-u", "OMPI_COMM_WORLD_RANK", "-u",
             "PMIX_RANK", "-u", "PMI_RANK", gpumem_binary(), "run", "--plot",
             folder + "/{rank}.svg"},
            "{rank}: gpumem's environment names no rank"},
           {{gpumem_binary(), "run", "--timeline", folder + "/{host.csv"}, "without its '}'"},
       }) {
    std::vector<std::string> argv = c.argv;
    argv.insert(argv.end(), {"--", "touch", marker});
    const CommandResult result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << result.err;
  }
}

TEST(RunRanks, AHostNameThatIsNotUtf8IsWrittenNotFatal) {
  SimGpu gpu;
  const RunOutcome run = run_with_json({}, {"true"},
                                       {"--host",
                                        "n\xff"
                                        "de"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.summary["host"],
            "n\xef\xbf\xbd"
            "de");  // U+FFFD
}

// The kernel names a process after its program's file, whatever the bytes.
TEST(RunRanks, AProcessNameThatIsNotUtf8IsWrittenNotFatal) {
  SimGpu gpu;
  const std::string odd = temporary_folder() + "/sim\xff";
  std::filesystem::create_symlink(sim_tool(), odd);
  const RunOutcome run = run_with_json({}, {odd, "workload", "alloc a 10MiB; sleep 50ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.summary["processes"].size(), 1u) << run.summary.dump(2);
  EXPECT_EQ(run.summary["processes"][0]["name"], "sim\xef\xbf\xbd");
}

}  // namespace
}  // namespace gpumem::testing
