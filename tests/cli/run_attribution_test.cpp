// `gpumem run --attribute/--html` on a program that runs out of memory on the simulated GPU
// (oom_program.cpp): the terminal summary, the combined document, its pprof file read by
// `go tool pprof`, and the HTML report name load_weights, which held the most.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

constexpr std::int64_t kWeights = 1536 * MiB;  // load_weights' two blocks

bool have(const std::string& program) {
  return run_command({"sh", "-c", "command -v " + program}).exit_code == 0;
}

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
