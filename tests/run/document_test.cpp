// The library's gpumem.run/1 and gpumem.report/1 (run_document.hpp, report_document.hpp): each
// made from what was measured with the figures the library decides, written by its one writer,
// read back by its one reader into the same model and written again to the same bytes; mutated
// documents are read or refused with the file named, never a crash (under ASan/UBSan, the
// readers' fuzz test).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gpumem/internal/report_document.hpp"
#include "gpumem/internal/run_document.hpp"
#include "support/json_mutations.hpp"

namespace gpumem::run {
namespace {

// A mixed run on two devices: GPU 0 counted exactly (its footprint above its events' peak),
// GPU 1 only sampled; two ranks, a budget over, a descendant left running, a foreign pid
// namespace.
RunResult two_device_run() {
  RunResult result;
  result.command = {"python3", "train.py", "--lr", "0.1"};
  result.exit = {143, 15};
  result.requested = Mode::automatic;
  result.interval_s = 0.01;
  result.descendants_wait_s = 60;
  result.descendants_running = {4300};
  result.start_unix_s = 1764655200.125;
  result.end_unix_s = 1764655201.5;
  result.host = "node-1";
  result.own_rank = {0, 0, "SLURM_PROCID", "SLURM_LOCALID"};
  result.measured = Measured::mixed;
  result.fallback_reason = "pid 4243 (python3): CUDA_INJECTION64_PATH cleared";
  result.exact_processes = 1;
  result.escaped_processes = 1;
  result.elapsed_s = 1.375;
  result.samples = 138;
  for (int ordinal : {0, 1}) {
    DeviceTrack device;
    device.info.device = ordinal;
    device.info.nvml_index = static_cast<unsigned>(ordinal + 2);
    device.info.name = "NVIDIA H200";
    device.info.uuid = "GPU-0000000" + std::to_string(ordinal);
    device.info.memory.total = 150754820096;
    device.device_start = 1000;
    device.device_peak = 700000000 + ordinal;
    device.device_end = 1000;
    device.tree_peak = 600000000 + ordinal;
    device.tree_peak_time_s = 0.5;
    device.exact_peak = ordinal == 0 ? 157286400 : 0;
    device.exact_peak_time_s = 0.25;
    device.context_bytes = ordinal == 0 ? 524288000 : 0;
    device.footprint_peak = ordinal == 0 ? 681574400 : 0;
    device.footprint_peak_time_s = 0.25;
    device.mixed_peak = ordinal == 1 ? 650000000 : 0;
    device.mixed_peak_time_s = 0.75;
    result.devices.push_back(device);
  }
  ProcessReport exact;
  exact.peak = {4242, ProcessKey{4242, 1}, 4242, "python3", 0, 600000000, {0, 0, "RANK", ""}};
  exact.exact = true;
  ProcessReport sampled;
  sampled.peak = {88, std::nullopt, 0, "python3", 1, 600000001, {1, std::nullopt, "RANK", ""}};
  sampled.reason = "CUDA_INJECTION64_PATH cleared";
  result.processes = {exact, sampled};
  result.nvml_pids_foreign = true;
  result.pid_namespace_reason = "NVML's pids are the host's";
  result.matched_pids = 1;
  result.unmapped_processes = 1;
  result.ranks = {{{0, 0, "RANK", "LOCAL_RANK"}, {4242}, {{0, 600000000, 0.5}}},
                  {{1, std::nullopt, "RANK", ""}, {88}, {{1, 600000001, 0.5}}}};
  return result;
}

TEST(RunDocument, TheDocumentHoldsTheFiguresTheLibraryDecided) {
  const RunResult result = two_device_run();
  const RunDocument document =
      run_document(result, {{0, 600000000, 681574400, true, "mixed", true}});
  EXPECT_EQ(document.signal, "SIGTERM");
  EXPECT_EQ(document.exit_code, 143);
  EXPECT_EQ(document.mode, "mixed");
  EXPECT_EQ(document.requested_mode, "auto");
  ASSERT_EQ(document.devices.size(), 2u);
  // GPU 0's headline: its footprint (events 150 MiB plus 500 MiB of contexts), above NVML's.
  EXPECT_EQ(document.devices[0].peak_bytes, 681574400);
  EXPECT_EQ(document.devices[0].peak_bytes, command_peak(result, result.devices[0]));
  EXPECT_EQ(document.devices[0].exact_peak_bytes, 157286400);
  EXPECT_EQ(document.devices[0].context_bytes, 524288000);
  // GPU 1's: the mixed level, above what the samples saw of the sampled process alone.
  EXPECT_EQ(document.devices[1].peak_bytes, 650000000);
  EXPECT_EQ(document.devices[1].nvml_index, 3);
  ASSERT_EQ(document.processes.size(), 2u);
  EXPECT_EQ(document.processes[0].pid, 4242);
  EXPECT_EQ(document.processes[1].pid, std::nullopt);  // NVML's pid matched none
  EXPECT_EQ(document.processes[1].reason, "CUDA_INJECTION64_PATH cleared");
  EXPECT_EQ(document.processes[0].reason, std::nullopt);
  ASSERT_EQ(document.ranks.size(), 2u);
  // Rank 0 alone and exact on GPU 0: its peak is the command's there (rank_rows); rank 1 was
  // sampled, so it keeps what NVML showed its process holding.
  EXPECT_EQ(document.ranks[0].peak_bytes, 681574400);
  EXPECT_EQ(document.ranks[0].measured, "exact");
  EXPECT_EQ(document.ranks[0].uuid, "GPU-00000000");
  EXPECT_EQ(document.ranks[1].peak_bytes, 600000001);
  EXPECT_EQ(document.ranks[1].measured, "sampled");
  EXPECT_EQ(document.pid_namespace.nvml_pids, "foreign");
  ASSERT_TRUE(document.gpumem_rank);
  EXPECT_EQ(document.gpumem_rank->variable, "SLURM_PROCID");
  EXPECT_TRUE(document.budget_exceeded);
  EXPECT_EQ(document.descendants_running, std::vector<std::int64_t>{4300});

  // Mixed: no range.
  EXPECT_EQ(document.devices[0].peak_at_most_bytes, std::nullopt);
  EXPECT_EQ(document.devices[0].exact_peak_at_most_bytes, std::nullopt);

  // Exact, with calls in flight together at the peak: the range's high ends, read back whole.
  RunResult ranged = result;
  ranged.measured = Measured::exact;
  ranged.devices[0].exact_peak_upper = 157286400 + 1048576;
  const RunDocument range = run_document(ranged, {});
  ASSERT_TRUE(range.devices[0].peak_at_most_bytes);
  EXPECT_EQ(range.devices[0].peak_at_most_bytes, command_peak_at_most(ranged, ranged.devices[0]));
  EXPECT_EQ(range.devices[0].exact_peak_at_most_bytes, 157286400 + 1048576);
  std::string error;
  const auto range_read = parse_run_document(run_document_text(range), "range.json", &error);
  ASSERT_TRUE(range_read) << error;
  EXPECT_EQ(range_read->devices[0].exact_peak_at_most_bytes, 157286400 + 1048576);
  EXPECT_EQ(run_document_text(*range_read), run_document_text(range));

  // Sampled, the exact figures are null and the headline is NVML's.
  RunResult sampled_run = result;
  sampled_run.measured = Measured::sampled;
  const RunDocument sampled = run_document(sampled_run, {});
  EXPECT_EQ(sampled.devices[0].exact_peak_bytes, std::nullopt);
  EXPECT_EQ(sampled.devices[0].context_bytes, std::nullopt);
  EXPECT_EQ(sampled.devices[0].peak_bytes, 600000000);
  EXPECT_FALSE(sampled.budget_exceeded);
}

TEST(RunDocument, WhatTheLibraryWritesItReadsBackToTheSameBytes) {
  const RunDocument written =
      run_document(two_device_run(), {{0, 600000000, 681574400, true, "mixed", true},
                                      {1, 700000000, 650000000, false, "mixed", true}});
  const std::string text = run_document_text(written);
  std::string error;
  const std::optional<RunDocument> read = parse_run_document(text, "run.json", &error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(run_document_text(*read), text);
  EXPECT_EQ(read->command, written.command);
  EXPECT_EQ(read->start_unix_s, 1764655200.125);
  EXPECT_EQ(read->devices[1].device_used_peak_bytes, 700000001);
  EXPECT_EQ(read->processes[1].nvml_pid, 88);
  EXPECT_EQ(read->ranks[1].local_rank, std::nullopt);
  EXPECT_EQ(read->ranks[1].devices[0].measured, "sampled");
  ASSERT_EQ(read->budgets.size(), 2u);
  EXPECT_EQ(read->budgets[1].budget_bytes, 700000000);
  EXPECT_EQ(read->pid_namespace.reason, "NVML's pids are the host's");

  // The summary (what gpumem report and diff read): the headline fields, the rest at defaults.
  const auto summary = parse_run_document(text, "run.json", &error, RunParts::summary);
  ASSERT_TRUE(summary) << error;
  EXPECT_TRUE(summary->processes.empty());
  EXPECT_TRUE(summary->budgets.empty());
  EXPECT_EQ(summary->signal, std::nullopt);
  EXPECT_EQ(summary->host, "node-1");
  EXPECT_EQ(summary->gpumem_rank->rank, 0);
  EXPECT_EQ(summary->start_unix_s, 1764655200.125);
  ASSERT_EQ(summary->devices.size(), 2u);
  EXPECT_EQ(summary->devices[1].peak_bytes, read->devices[1].peak_bytes);
  EXPECT_EQ(summary->devices[1].uuid, "GPU-00000001");
  EXPECT_EQ(summary->devices[1].device_used_peak_bytes, 0);  // not kept
  ASSERT_EQ(summary->ranks.size(), 2u);
  EXPECT_EQ(summary->ranks[0].peak_bytes, 681574400);
  EXPECT_EQ(summary->ranks[0].measured, "exact");
  EXPECT_TRUE(summary->ranks[0].devices.empty());  // not kept

  // A file from before the times were recorded is written back without them.
  RunDocument old = *read;
  old.start_unix_s.reset();
  old.end_unix_s.reset();
  const std::string old_text = run_document_text(old);
  EXPECT_EQ(old_text.find("start_unix_s"), std::string::npos);
  const auto old_read = parse_run_document(old_text, "old.json", &error);
  ASSERT_TRUE(old_read) << error;
  EXPECT_EQ(run_document_text(*old_read), old_text);
}

TEST(RunDocument, AFieldThatIsNotWhatTheSchemaSaysIsNamedByItsPath) {
  const std::string text = run_document_text(run_document(two_device_run(), {}));
  auto error_of = [](std::string changed, const std::string& from, const std::string& to) {
    const std::size_t at = changed.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    changed.replace(at, from.size(), to);
    std::string error;
    EXPECT_FALSE(parse_run_document(changed, "bad.json", &error)) << changed;
    return error;
  };
  EXPECT_EQ(error_of(text, "\"mode\": \"sampled\",\n      \"reason\"",
                     "\"mode\": \"both\",\n      \"reason\""),
            "bad.json: processes[1].mode: expected one of exact, sampled, found \"both\"");
  EXPECT_EQ(error_of(text, "\"pids\": [\n        88\n      ]", "\"pids\": [-88]"),
            "bad.json: ranks[1].pids[0]: expected a pid, found -88");
  EXPECT_EQ(error_of(text, "\"nvml_pids\": \"foreign\"", "\"nvml_pids\": 1"),
            "bad.json: pid_namespace.nvml_pids: expected a string, found 1");
  EXPECT_EQ(error_of(text, "\"mode\": \"mixed\",\n  \"requested_mode\"",
                     "\"mode\": \"odd\",\n  \"requested_mode\""),
            "bad.json: mode: expected exact, mixed or sampled, found \"odd\"");
}

// Mutated documents (bytes changed, cut, duplicated, numbers replaced): each is refused with an
// error naming the file, or read into a model that writes and reads back to the same bytes.
template <typename Parse, typename Write>
void mutate(const std::string& original, Parse parse, Write write, std::size_t* read,
            std::size_t* refused) {
  std::mt19937 random(4321);
  for (int round = 0; round < 3000; ++round) {
    const std::string text = testing::mutated_json(original, random);
    std::string error;
    const auto document = parse(text, &error);
    if (!document) {
      ++*refused;
      EXPECT_EQ(error.rfind("m.json: ", 0), 0u) << error;
      continue;
    }
    ++*read;
    const std::string written = write(*document);
    const auto again = parse(written, &error);
    ASSERT_TRUE(again) << error << "\n" << written;
    EXPECT_EQ(write(*again), written);
  }
}

TEST(RunDocument, MutatedDocumentsAreReadOrRefusedNeverCrash) {
  const std::string original =
      run_document_text(run_document(two_device_run(), {{0, 1, 2, true, "mixed", true}}));
  std::size_t read = 0, refused = 0;
  mutate(
      original,
      [](const std::string& text, std::string* error) {
        return parse_run_document(text, "m.json", error);
      },
      [](const RunDocument& document) { return run_document_text(document); }, &read, &refused);
  EXPECT_GT(read, 100u);
  EXPECT_GT(refused, 1000u);
}

// Two runs on one node sharing GPU-00000000 at the same time, and a third on another node.
std::vector<RunFile> three_runs() {
  std::vector<RunFile> runs;
  for (int rank : {0, 1, 2}) {
    RunResult result = two_device_run();
    result.host = rank == 2 ? "node-2" : "node-1";
    result.own_rank = {rank, rank % 2, "SLURM_PROCID", "SLURM_LOCALID"};
    result.ranks = {{{rank, rank % 2, "RANK", "LOCAL_RANK"}, {4242}, {{0, 600000000, 0.5}}}};
    if (rank == 2) {
      for (DeviceTrack& device : result.devices) device.info.uuid += "-b";
      result.start_unix_s += 100;
      result.end_unix_s += 100;
    }
    runs.push_back({"run-" + std::to_string(rank) + ".json", run_document(result, {})});
  }
  return runs;
}

TEST(ReportDocument, TheJobsHeadlineIsDecidedOnceAndReadBackWithItsReferences) {
  const JobReport report = combine_runs(three_runs());
  ASSERT_EQ(report.devices.size(), 4u);
  // GPU-00000000: both node-1 runs overlapped, so their footprints add up.
  EXPECT_EQ(report.devices[0].peak_bytes, 2 * 681574400);
  EXPECT_EQ(report.devices[0].combined, JobDevice::Combined::sum);
  EXPECT_EQ(report.devices[0].runs_summed, 2);
  ASSERT_TRUE(report.maximum);
  EXPECT_EQ(report.devices[*report.maximum].key, "GPU-00000000");
  ASSERT_TRUE(report.devices[0].top_rank);
  EXPECT_EQ(report.ranks[*report.devices[0].top_rank].rank, 0);
  EXPECT_EQ(report.devices[2].peak_bytes, 681574400);  // node-2's own GPU 0
  EXPECT_EQ(report.devices[2].combined, JobDevice::Combined::one);
  EXPECT_EQ(report.mode, "mixed");

  const std::string text = report_document_text(report);
  std::string error;
  const std::optional<JobReport> read = parse_report_document(text, "report.json", &error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(report_document_text(*read), text);
  EXPECT_EQ(read->maximum, report.maximum);
  EXPECT_EQ(read->devices[0].top_rank, report.devices[0].top_rank);
  EXPECT_EQ(read->devices[2].top_rank, report.devices[2].top_rank);
  ASSERT_EQ(read->nodes.size(), 2u);
  EXPECT_EQ(read->nodes[1].peak_device, report.nodes[1].peak_device);
  EXPECT_EQ(read->inputs[2].start_unix_s, 1764655300.125);
  EXPECT_EQ(read->devices[0].combined, JobDevice::Combined::sum);

  // A reference to a device the report does not hold is refused, by its path.
  std::string broken = text;
  const std::string key = "\"peak_device\": \"GPU-00000000-b\"";
  ASSERT_NE(broken.find(key), std::string::npos) << text;
  broken.replace(broken.find(key), key.size(), "\"peak_device\": \"GPU-9\"");
  EXPECT_FALSE(parse_report_document(broken, "r.json", &error));
  EXPECT_EQ(error, "r.json: nodes[1].peak_device: no device \"GPU-9\" in devices");
}

TEST(ReportDocument, MutatedReportsAreReadOrRefusedNeverCrash) {
  const std::string original = report_document_text(combine_runs(three_runs()));
  std::size_t read = 0, refused = 0;
  mutate(
      original,
      [](const std::string& text, std::string* error) {
        return parse_report_document(text, "m.json", error);
      },
      [](const JobReport& report) { return report_document_text(report); }, &read, &refused);
  EXPECT_GT(read, 100u);
  EXPECT_GT(refused, 1000u);
}

}  // namespace
}  // namespace gpumem::run
