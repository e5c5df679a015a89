// The gpumem.report/1 document (docs/cli.md, "`--json` schema `gpumem.report/1`") as one model:
// run files (gpumem.run/1) of a job's nodes and ranks combined into peaks per rank, per node and
// per device, and the job's maximum (combine_runs: every figure of the report, the job's
// headline among them, decided here once); written by one writer (report_document_text) and read
// back by one reader (read_report_document). `gpumem report` renders the model (tables, JSON,
// SVG), `gpumem diff` reads it back: there is no other reader or writer of the format.
//
// A seam (src/run implements it): exported from libgpumem.so for gpumem's tools, never
// installed. Errors: a reader returns nullopt with one line in `error` naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpumem/internal/run_document.hpp"

#pragma GCC visibility push(default)

namespace gpumem::run {

inline constexpr const char* kReportSchema = "gpumem.report/1";

// A run file read for a report: where it was, and what it holds.
struct RunFile {
  std::string path;
  RunDocument run;
};

struct JobInput {
  std::string path;
  std::string node;
  std::string mode;
  std::optional<int> gpumem_rank;
  int exit_code = 0;
  double elapsed_s = 0;
  std::optional<double> start_unix_s, end_unix_s;  // absent in older run files
};

struct JobDevice {
  std::string key;   // the UUID, else "node:index" (a run that could not read it)
  std::string uuid;  // empty when the runs could not tell
  std::string node;
  std::optional<int> nvml_index;
  int device = 0;  // CUDA ordinal, in the first run that measured it
  std::string name;
  std::int64_t total_bytes = 0;
  // The job's peak on the device. When several runs used it (gpumem run per rank sharing a GPU,
  // or one job's steps one after another), the highest, over time, of the sum of the peaks of
  // the runs running at that moment: never below what they held together, possibly above
  // (their peaks need not coincide). Runs without times (older files) are all summed.
  std::int64_t peak_bytes = 0;
  int runs_using = 0;  // runs with a non-zero peak on it
  enum class Combined {
    one,              // one run used it
    highest,          // several, none overlapping another: the highest run's peak
    sum,              // the sum of `runs_summed` runs that overlapped
    overlap_unknown,  // the sum of all: some file has no start and end time
  };
  Combined combined = Combined::one;
  int runs_summed = 0;                  // runs whose peaks make up peak_bytes
  std::optional<std::size_t> top_rank;  // index in JobReport::ranks of the rank that held most
};

struct JobRank {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::string file;
  std::string device_key;  // of its peak; empty when it used none
  std::optional<int> device;
  std::string device_name;
  std::int64_t peak_bytes = 0;
  std::string measured;  // exact or sampled
};

struct JobNode {
  std::string name;
  int runs = 0;
  int ranks = 0;
  int devices_used = 0;
  std::string mode;
  std::int64_t peak_bytes = 0;             // the highest device peak on the node
  std::optional<std::size_t> peak_device;  // index in JobReport::devices
};

struct JobReport {
  std::string quantity = "process_footprint";
  std::vector<JobInput> inputs;
  std::string mode;  // exact only if every run was
  std::vector<JobRank> ranks;
  std::vector<JobNode> nodes;
  std::vector<JobDevice> devices;
  // The job's headline: the device with the highest peak (none when no run used a GPU), and on
  // it the rank that held most (its top_rank).
  std::optional<std::size_t> maximum;
  std::vector<std::string> warnings;  // files that look like different jobs, duplicated ranks
};

// The job's report from its run files, in the order given.
JobReport combine_runs(const std::vector<RunFile>& runs);

// The report as the text `gpumem report --json` writes (two-space indent, a final line break,
// bytes that are not UTF-8 replaced by U+FFFD).
std::string report_document_text(const JobReport& report);

// "one_run", "highest", "sum", "sum_overlap_unknown": the JSON's words. No tool calls it (the
// writer is the library's): hidden in libgpumem.so.
__attribute__((visibility("hidden"))) const char* to_string(JobDevice::Combined combined);

// Reads and checks `path` (a file of at most 256 MiB); nullopt with `error` naming the file and
// what is wrong with it (another schema or version, a field missing or mistyped by its path, a
// reference to a device or rank the report does not hold).
std::optional<JobReport> read_report_document(const std::string& path, std::string* error);

}  // namespace gpumem::run

#pragma GCC visibility pop

// Not exported: what gpumem's tools do not use (the library's own tests link its objects).
namespace gpumem::run {

// A device's figure from the runs that used it, each with its peak there and when it ran: the
// highest sum of the peaks of the runs alive at one moment (a span that ends when another starts
// counts as overlapping it: the bound stays on the safe side). Sets peak_bytes, runs_using,
// combined and runs_summed.
struct RunUsage {
  std::int64_t peak = 0;
  std::optional<double> start, end;
};
void combine_usages(JobDevice& device, const std::vector<RunUsage>& usages);

// The report as JSON (report_document_text's).
nlohmann::ordered_json report_document_json(const JobReport& report);
// The same from text already read (`path` names it in errors).
std::optional<JobReport> parse_report_document(std::string_view text, const std::string& path,
                                               std::string* error);

}  // namespace gpumem::run
