// `gpumem run --attribute/--html` on a program that runs out of memory on the simulated GPU
// (oom_program.cpp): the terminal summary, the combined document, its pprof file read by
// `go tool pprof`, and the HTML report name load_weights, which held the most.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/browser.hpp"
#include "cli/command_runner.hpp"
#include "format.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

constexpr std::int64_t kWeights = 1536 * MiB;  // load_weights' two blocks

struct AttributedRun {
  std::string folder;
  CommandResult result;
  nlohmann::json document;
};

AttributedRun run_out_of_memory() {
  AttributedRun run;
  run.folder = temporary_folder();
  run.result = run_command({gpumem_binary(), "run", "--attribute", run.folder + "/a.json", "--html",
                            run.folder + "/r.html", "--", GPUMEM_OOM_PROGRAM});
  const std::string text = read_file(run.folder + "/a.json");
  if (!text.empty()) run.document = nlohmann::json::parse(text);
  return run;
}

// The bytes held per innermost function of the snapshot, from the document's own indices.
std::int64_t bytes_under(const nlohmann::json& document, const nlohmann::json& snapshot,
                         const std::string& function) {
  std::int64_t bytes = 0;
  for (const auto& block : snapshot["blocks"]) {
    if (block["stack"].is_null()) continue;
    for (const auto& frame : document["stacks"][block["stack"].get<std::size_t>()]) {
      const auto& name = document["frames"][frame.get<std::size_t>()]["function"];
      if (name.is_string() && name.get<std::string>().find(function) != std::string::npos) {
        bytes += block["bytes"].get<std::int64_t>();
        break;
      }
    }
  }
  return bytes;
}

TEST(RunAttribution, OutOfMemoryNamesTheFunctionThatHeldTheMost) {
  SimGpu gpu;
  const AttributedRun run = run_out_of_memory();
  ASSERT_EQ(run.result.exit_code, 1) << run.result.err;  // the program's own status
  EXPECT_NE(run.result.out.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);
  const std::string& err = run.result.err;
  const auto peak_at = err.find("at the highest process peak");
  const auto oom_at = err.find("ran out of memory");
  ASSERT_NE(peak_at, std::string::npos) << err;
  ASSERT_NE(oom_at, std::string::npos) << err;
  EXPECT_NE(err.find("load_weights", peak_at), std::string::npos) << err;
  EXPECT_NE(err.find("load_weights", oom_at), std::string::npos) << err;
  EXPECT_NE(err.find("allocate_activations", oom_at), std::string::npos) << err;
  // The first row of each table: the 1 GiB block load_weights allocated.
  const std::regex top_row(R"(ALLOCATED BY[^\n]*\n\s*1\.0 GiB\s+\S+\s+1\s+load_weights)");
  EXPECT_TRUE(std::regex_search(err.substr(peak_at, oom_at - peak_at), top_row)) << err;
  EXPECT_TRUE(std::regex_search(err.substr(oom_at), top_row)) << err;
  EXPECT_NE(err.find("failed: 1.0 TiB (device) with CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);

  const nlohmann::json& document = run.document;
  ASSERT_FALSE(document.is_null()) << err;
  EXPECT_EQ(document["schema"], "gpumem.attribution/1");
  EXPECT_NE(document["command"].get<std::string>().find("gpumem_oom_program"), std::string::npos);
  ASSERT_EQ(document["devices"].size(), 1u) << document.dump(2);
  EXPECT_EQ(document["devices"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(document["devices"][0]["uuid"], "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  const nlohmann::json* peak = nullptr;
  const nlohmann::json* oom = nullptr;
  for (const auto& snapshot : document["snapshots"]) {
    if (snapshot["what"] == "peak") peak = &snapshot;
    if (snapshot["what"] == "oom") oom = &snapshot;
  }
  ASSERT_NE(peak, nullptr) << document.dump(2);
  ASSERT_NE(oom, nullptr) << document.dump(2);
  // The peak: the weights and the warm-up's scratch at once.
  EXPECT_GE((*peak)["level_bytes"].get<std::int64_t>(), kWeights + 64 * MiB);
  EXPECT_EQ(bytes_under(document, *peak, "load_weights"), kWeights);
  EXPECT_EQ(bytes_under(document, *peak, "warm_up"), 64 * MiB);
  EXPECT_EQ(bytes_under(document, *oom, "load_weights"), kWeights);
  EXPECT_EQ(bytes_under(document, *oom, "warm_up"), 0);
  EXPECT_EQ((*oom)["failure"]["bytes"], std::int64_t{1} << 40);
  EXPECT_EQ((*oom)["failure"]["error"], "CUDA_ERROR_OUT_OF_MEMORY");
  // The exact timeline steps up to the peak.
  ASSERT_EQ(document["timeline"].size(), 1u);
  std::int64_t highest = 0;
  for (const auto& step : document["timeline"][0]["steps"]) {
    highest = std::max(highest, step[1].get<std::int64_t>());
  }
  EXPECT_GE(highest, kWeights + 64 * MiB);

  const std::string html = read_file(run.folder + "/r.html");
  EXPECT_NE(html.find("load_weights"), std::string::npos);
  EXPECT_NE(html.find(std::to_string(kWeights)), std::string::npos);
}

const nlohmann::json* snapshot_of(const nlohmann::json& document, const std::string& what) {
  for (const auto& snapshot : document["snapshots"]) {
    if (snapshot["what"] == what) return &snapshot;
  }
  return nullptr;
}

const nlohmann::json* other_with_pid(const nlohmann::json& snapshot, long long pid) {
  for (const auto& other : snapshot["other_processes"]) {
    if (other["pid"] == pid) return &other;
  }
  return nullptr;
}

// A run that fails while another process (outside the run, on the GPU before it started) holds
// 2 GiB and another of the run's own processes (rank 1) holds 256 MiB of the same device.
struct CrowdedRun {
  std::string folder;
  BackgroundCommand outsider;
  CommandResult result;
};

std::unique_ptr<CrowdedRun> run_out_of_memory_among_others() {
  const std::string folder = temporary_folder();
  auto run = std::unique_ptr<CrowdedRun>(new CrowdedRun{
      folder,
      BackgroundCommand({sim_tool(), "workload", "alloc a 2GiB; print ready; sleep 60s"}),
      {}});
  if (!run->outsider.wait_for_output("ready")) return run;
  const std::string sibling = "RANK=1 '" + sim_tool() +
                              "' workload 'alloc b 256MiB; print sibling-ready; sleep 1500ms' & "
                              "while ! grep -q sibling-ready " +
                              folder +
                              "/sibling.out 2>/dev/null; "
                              "do sleep 0.01; done; sleep 0.2; exec '" GPUMEM_OOM_PROGRAM "'";
  run->result = run_command({gpumem_binary(), "run", "--attribute", folder + "/a.json", "--html",
                             folder + "/r.html", "--", "sh", "-c",
                             "exec > " + folder + "/sibling.out; " + sibling});
  return run;
}

// Who else held the device at the failure, with what NVML showed each holding (the test
// devices' contexts cost nothing); the process that failed is not among them.
TEST(RunAttribution, TheFailureNamesWhoElseHeldTheDevice) {
  SimGpu gpu;
  const std::unique_ptr<CrowdedRun> run = run_out_of_memory_among_others();
  const std::string& folder = run->folder;
  const BackgroundCommand& outsider = run->outsider;
  const CommandResult& result = run->result;
  ASSERT_EQ(result.exit_code, 1) << result.err;
  const std::string text = read_file(folder + "/a.json");
  ASSERT_FALSE(text.empty()) << result.err;
  const nlohmann::json document = nlohmann::json::parse(text);
  const nlohmann::json* oom = snapshot_of(document, "oom");
  ASSERT_NE(oom, nullptr) << document.dump(2);

  ASSERT_TRUE((*oom)["other_processes_age_s"].is_number()) << oom->dump(2);
  // The monitor samples every 10 ms: the list it read last before the failure is recent.
  EXPECT_GE((*oom)["other_processes_age_s"].get<double>(), 0.0);
  EXPECT_LT((*oom)["other_processes_age_s"].get<double>(), 1.0);
  ASSERT_EQ((*oom)["other_processes"].size(), 2u) << oom->dump(2);
  const nlohmann::json* outside = other_with_pid(*oom, outsider.pid());
  ASSERT_NE(outside, nullptr) << oom->dump(2);
  EXPECT_EQ((*outside)["used_bytes"], 2048 * MiB);
  EXPECT_EQ((*outside)["name"], "gpumem-sim");
  EXPECT_EQ((*outside)["in_run"], false);
  EXPECT_TRUE((*outside)["rank"].is_null());
  const nlohmann::json* in_run = nullptr;
  for (const auto& other : (*oom)["other_processes"]) {
    if (other["in_run"] == true) in_run = &other;
  }
  ASSERT_NE(in_run, nullptr) << oom->dump(2);
  EXPECT_EQ((*in_run)["used_bytes"], 256 * MiB);
  EXPECT_EQ((*in_run)["rank"], 1);
  EXPECT_EQ((*in_run)["name"], "gpumem-sim");
  EXPECT_EQ(other_with_pid(*oom, (*oom)["pid"].get<long long>()), nullptr)
      << "the failing process is not another process";
  // The failure sits on the run's clock: within the run, after the sibling was ready.
  EXPECT_GT((*oom)["time_s"].get<double>(), 0.2);

  const std::string& err = result.err;
  const auto oom_at = err.find("ran out of memory");
  ASSERT_NE(oom_at, std::string::npos) << err;
  EXPECT_NE(err.find("2 other processes held 2.2 GiB on the device (NVML's list", oom_at),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("gpumem-sim (this run, rank 1)", oom_at), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(outsider.pid()), oom_at), std::string::npos) << err;
}

// The run's HTML report in a real browser: the figures it shows are the run document's.
TEST(RunAttribution, TheRunsHtmlReportShowsItsFiguresInABrowser) {
  if (!have("chromium")) GTEST_SKIP() << "chromium (Debian's chromium) is not installed";
  SimGpu gpu;
  const std::unique_ptr<CrowdedRun> run = run_out_of_memory_among_others();
  ASSERT_EQ(run->result.exit_code, 1) << run->result.err;
  const std::string& folder = run->folder;
  const nlohmann::json document = nlohmann::json::parse(read_file(folder + "/a.json"));
  const nlohmann::json* peak = snapshot_of(document, "peak");
  const nlohmann::json* oom = snapshot_of(document, "oom");
  ASSERT_NE(peak, nullptr);
  ASSERT_NE(oom, nullptr);
  std::int64_t others = 0;
  for (const auto& other : (*oom)["other_processes"])
    others += other["used_bytes"].get<std::int64_t>();
  ASSERT_EQ(others, 2304 * MiB);
  // The timeline's highest step, where the report marks the peak.
  ASSERT_EQ(document["timeline"].size(), 1u);
  double peak_time = 0;
  std::int64_t highest = 0;
  for (const auto& step : document["timeline"][0]["steps"]) {
    if (step[1].get<std::int64_t>() > highest) {
      highest = step[1].get<std::int64_t>();
      peak_time = step[0].get<double>();
    }
  }

  const std::string html = folder + "/r.html";
  const CommandResult dom = dump_dom(folder, "file://" + html);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos) << dom.out.substr(0, 2000);
  // Among several peaks the report shows the highest (here: the one process's own).
  EXPECT_EQ(attribute(dom.out, "peak-level", "data-bytes"),
            std::to_string((*peak)["level_bytes"].get<std::int64_t>()));
  EXPECT_EQ(element(dom.out, "peak-top-function").rfind("load_weights", 0), 0u)
      << element(dom.out, "peak-top-function");
  EXPECT_EQ(attribute(dom.out, "peak-blocks", "data-count"),
            std::to_string((*peak)["blocks"].size()));
  EXPECT_EQ(attribute(dom.out, "oom-request", "data-bytes"), std::to_string(std::int64_t{1} << 40));
  EXPECT_EQ(element(dom.out, "oom-request"), "1.0 TiB");
  EXPECT_EQ(element(dom.out, "oom-top-function").rfind("load_weights", 0), 0u);
  EXPECT_EQ(attribute(dom.out, "oom-blocks", "data-count"),
            std::to_string((*oom)["blocks"].size()));
  // Who else held the device, as the document says.
  EXPECT_EQ(attribute(dom.out, "oom-others", "data-bytes"), std::to_string(others));
  EXPECT_EQ(attribute(dom.out, "oom-others", "data-count"), "2");
  EXPECT_EQ(element(dom.out, "oom-others"), "2.3 GiB");
  EXPECT_EQ(
      element(dom.out, "panel-oom-others").rfind("2.3 GiB in 2 other processes (NVML's list", 0),
      0u)
      << element(dom.out, "panel-oom-others");
  EXPECT_NE(dom.out.find("yes, rank 1"), std::string::npos);
  EXPECT_NE(dom.out.find(">" + std::to_string(run->outsider.pid()) + "<"), std::string::npos);
  // The timeline marks the run's peak and the failure, on the run's clock.
  const std::string label =
      "peak " + cli::format_bytes(highest) + " at " + cli::format_seconds(peak_time);
  EXPECT_NE(dom.out.find(label), std::string::npos) << label;
  EXPECT_NE(dom.out.find("class=\"mark oom\""), std::string::npos);

  expect_screenshot(folder, html, "run-report.png");
}

// A process with its own CUDA_VISIBLE_DEVICES calls gpumem's GPU 1 its device 0: the document
// names the GPU it really used, by UUID, with gpumem's ordinal (the one the summary uses).
TEST(RunAttribution, ProcessesDevicesAreFoundByUuid) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--attribute", folder + "/a.json", "--", "env",
                   "CUDA_VISIBLE_DEVICES=1", GPUMEM_OOM_PROGRAM});
  ASSERT_EQ(result.exit_code, 1) << result.err;
  const nlohmann::json document = nlohmann::json::parse(read_file(folder + "/a.json"));
  const CommandResult listed = run_command({gpumem_binary(), "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json gpus = nlohmann::json::parse(listed.out);
  std::string uuid_of_1;
  for (const auto& device : gpus["devices"]) {
    if (device["device"] == 1) uuid_of_1 = device["uuid"].get<std::string>();
  }
  ASSERT_FALSE(uuid_of_1.empty()) << listed.out;
  ASSERT_EQ(document["devices"].size(), 1u) << document.dump(2);
  EXPECT_EQ(document["devices"][0]["ordinal"], 1);
  EXPECT_EQ(document["devices"][0]["uuid"], uuid_of_1);
  EXPECT_EQ(document["devices"][0]["name"], "NVIDIA A100-SXM4-40GB");
  for (const auto& snapshot : document["snapshots"]) EXPECT_EQ(snapshot["device"], 1);
  ASSERT_EQ(document["timeline"].size(), 1u);
  EXPECT_EQ(document["timeline"][0]["device"], 1);
  EXPECT_NE(result.err.find("out-of-memory failure on GPU 1 (NVIDIA A100-SXM4-40GB)"),
            std::string::npos)
      << result.err;
}

TEST(RunAttribution, TheViewsReadTheRunsDocument) {
  SimGpu gpu;
  const AttributedRun run = run_out_of_memory();
  ASSERT_FALSE(run.document.is_null()) << run.result.err;
  const std::string svg = run.folder + "/s.svg";
  const std::string profile = run.folder + "/p.pb.gz";
  const CommandResult views = run_command(
      {gpumem_binary(), "attribution", run.folder + "/a.json", "--svg", svg, "--pprof", profile});
  ASSERT_EQ(views.exit_code, 0) << views.err;
  EXPECT_NE(views.out.find("load_weights"), std::string::npos) << views.out;
  EXPECT_NE(read_file(svg).find("load_weights"), std::string::npos);
  if (!have("go")) GTEST_SKIP() << "go (Debian's golang-go) is not installed";
  const CommandResult top = run_command(
      {"env", "HOME=" + run.folder, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off",
       "GOCACHE=" + run.folder + "/go-cache", "go", "tool", "pprof", "-top", "-unit=B", profile});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("load_weights"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find(std::to_string(kWeights) + "B"), std::string::npos) << top.out;
}

// Issue 19: the HTML report's card said "peak level 1.6 GiB" where the terminal said "peak 2.1
// GiB process footprint": the measured process's snapshot had no context. Now the context the
// monitor found is a named part of the snapshot's level, which is the run's peak in every view.
struct ContextRun {
  std::string folder;
  CommandResult result;
  nlohmann::json summary;
  nlohmann::json peak;  // the document's peak snapshot
};

ContextRun run_with_context(const std::string& script) {
  ContextRun run;
  run.folder = temporary_folder();
  run.result =
      run_command({gpumem_binary(), "run", "-i", "0.005", "--json", run.folder + "/run.json",
                   "--attribute", run.folder + "/a.json", "--html", run.folder + "/r.html", "--",
                   sim_tool(), "workload", script});
  const std::string summary = read_file(run.folder + "/run.json");
  if (!summary.empty()) run.summary = nlohmann::json::parse(summary);
  const std::string text = read_file(run.folder + "/a.json");
  if (text.empty()) return run;
  const nlohmann::json document = nlohmann::json::parse(text);
  for (const auto& snapshot : document["snapshots"]) {
    if (snapshot["what"] == "peak") run.peak = snapshot;
  }
  return run;
}

TEST(RunAttribution, TheSnapshotsLevelIsTheRunsPeakWithTheContextNamed) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const ContextRun run =
      run_with_context("alloc a 100MiB; sleep 150ms; spike 50MiB 1ms; sleep 150ms");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_FALSE(run.peak.is_null()) << run.result.err;
  const auto& device = run.summary["devices"][0];
  ASSERT_EQ(device["peak_bytes"], 650 * MiB) << device.dump(2);
  EXPECT_EQ(run.peak["live_bytes"], 150 * MiB);
  EXPECT_EQ(run.peak["context_bytes"], 500 * MiB);
  EXPECT_EQ(run.peak["level_bytes"], device["peak_bytes"]);  // one peak, every view
  EXPECT_NE(run.result.err.find("level 650.0 MiB: 150.0 MiB in 2 live blocks from 1 stack, "
                                "500.0 MiB context and modules, 0 B held without a block"),
            std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("(context and modules)"), std::string::npos) << run.result.err;
  const CommandResult views = run_command({gpumem_binary(), "attribution", run.folder + "/a.json"});
  ASSERT_EQ(views.exit_code, 0) << views.err;
  EXPECT_NE(views.out.find("500.0 MiB context and modules"), std::string::npos) << views.out;
  EXPECT_EQ(views.err.find("warning"), std::string::npos) << views.err;
}

// A spike made before the monitor's first sample: the context found after it stood under it.
TEST(RunAttribution, ASpikeBeforeTheFirstSampleHasTheContextFoundAfterIt) {
  SimGpu gpu(R"({"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "context_mib": 500}]})");
  const ContextRun run = run_with_context("alloc a 100MiB; free a; sleep 150ms");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_FALSE(run.peak.is_null()) << run.result.err;
  EXPECT_EQ(run.summary["devices"][0]["peak_bytes"], 600 * MiB);
  EXPECT_EQ(run.peak["context_bytes"], 500 * MiB);
  EXPECT_EQ(run.peak["level_bytes"], 600 * MiB);
}

TEST(RunAttribution, ARunWithoutAttributeWritesNoSnapshots) {
  SimGpu gpu;
  const std::string tmp = temporary_folder();
  const CommandResult result =
      run_command({"env", "TMPDIR=" + tmp, gpumem_binary(), "run", "--", GPUMEM_OOM_PROGRAM});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(result.err.find("at the highest process peak"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("ran out of memory"), std::string::npos) << result.err;
  for (const auto& entry : std::filesystem::directory_iterator(tmp)) {
    EXPECT_EQ(entry.path().filename().string().find("gpumem-attribution"), std::string::npos);
  }
}

TEST(RunAttribution, SampledModeCannotAttributeAndSaysSo) {
  SimGpu gpu;
  const std::string folder = temporary_folder();
  const CommandResult result =
      run_command({gpumem_binary(), "run", "--mode", "sampled", "--attribute", folder + "/a.json",
                   "--", GPUMEM_OOM_PROGRAM});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--attribute/--html need exact counting: --mode sampled"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(folder + "/a.json"));
}

}  // namespace
}  // namespace gpumem::testing
