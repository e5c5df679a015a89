// The gpumem.run/1 document (docs/cli.md, "`--json` schema `gpumem.run/1`") as one model: every
// field the document has, made from a run's result (run_document), written by one writer
// (run_document_text) and read back by one reader (read_run_document, on the checked-JSON reader
// of gpumem/internal/checked_json.hpp). `gpumem run --json` writes through it; `gpumem report`,
// `gpumem diff` and the Python package read through it: there is no other reader or writer of
// the format. What the library writes, it reads back into the same model and writes again to the
// same bytes.
//
// A seam (src/run implements it): exported from libgpumem.so for gpumem's tools and the Python
// extension, never installed. Errors: a reader returns nullopt with one line in `error`
// ("path: devices[2].peak_bytes: expected a number of bytes, found -1").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpumem/internal/run_result.hpp"

#pragma GCC visibility push(default)

namespace gpumem::run {

inline constexpr const char* kRunSchema = "gpumem.run/1";

// One measured device, in CUDA ordinal order.
struct RunDocDevice {
  int device = 0;  // CUDA ordinal in that run
  std::optional<int> nvml_index;
  std::string name;
  std::string uuid;  // empty when the run could not tell
  std::int64_t total_bytes = 0;
  std::int64_t peak_bytes = 0;  // the command's peak there (command_peak)
  // Where calls in flight together bound the peak to a range: its high end (command_peak_at_most;
  // peak_bytes is the low end); null where the peak is known to the byte.
  std::optional<std::int64_t> peak_at_most_bytes;
  double peak_time_s = 0;
  std::optional<std::int64_t> exact_peak_bytes;          // null when sampled
  std::optional<std::int64_t> exact_peak_at_most_bytes;  // the events' range's high end, likewise
  std::int64_t sampled_peak_bytes = 0;
  std::optional<std::int64_t> context_bytes;  // null when sampled
  std::int64_t device_used_start_bytes = 0;
  std::int64_t device_used_peak_bytes = 0;
  std::int64_t device_used_end_bytes = 0;
  std::int64_t unmapped_peak_bytes = 0;
  bool bounded_by_device_used = false;
  std::string quantity = "process_footprint";  // what peak_bytes measures
};

// One process of the tree NVML showed on a device.
struct RunDocProcess {
  std::optional<std::int64_t> pid;  // in gpumem's namespace; null when unmatched
  std::int64_t nvml_pid = 0;
  std::string name;
  int device = 0;
  std::string mode;                   // exact or sampled
  std::optional<std::string> reason;  // why sampled; null when exact
  std::int64_t sampled_peak_bytes = 0;
  std::optional<int> rank;
  std::optional<int> local_rank;
};

struct RunDocRankDevice {
  int device = 0;
  std::string uuid;
  std::int64_t peak_bytes = 0;
  std::string measured;  // exact or sampled
};

// One rank of the command's GPU processes: its peak where it peaked, and per device.
struct RunDocRank {
  std::optional<int> rank;
  std::optional<int> local_rank;  // at least one of the two
  std::vector<std::int64_t> pids;
  std::int64_t peak_bytes = 0;
  std::optional<int> device;        // of its peak; null when it used none
  std::optional<std::string> uuid;  // likewise
  std::string measured;             // exact or sampled
  std::vector<RunDocRankDevice> devices;
};

struct RunDocPidNamespace {
  std::string nvml_pids = "own";  // own or foreign
  std::optional<std::string> reason;
  std::int64_t matched = 0;
  std::int64_t unmatched = 0;
  bool nested = false;
};

// gpumem's own rank, from its environment.
struct RunDocOwnRank {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string variable;  // "SLURM_PROCID", ...
};

// One --max-peak verdict.
struct RunDocBudget {
  int device = 0;
  std::int64_t budget_bytes = 0;
  std::int64_t peak_bytes = 0;
  bool exceeded = false;
  std::string measured;  // exact, mixed or sampled
  bool may_be_higher = false;
  std::optional<std::int64_t> peak_at_most_bytes;  // a range's high end (peak_bytes its low end)
};

struct RunDocument {
  std::vector<std::string> command;
  int exit_code = 0;
  std::optional<std::string> signal;  // "SIGTERM" when a signal killed the command
  double elapsed_s = 0;
  // When the command started and gpumem stopped measuring it (Unix time); absent in files from
  // before they were recorded (then both are), and then not written either.
  std::optional<double> start_unix_s;
  std::optional<double> end_unix_s;
  std::string mode = "sampled";         // exact, mixed or sampled
  std::string requested_mode = "auto";  // auto, exact or sampled
  std::optional<std::string> fallback_reason;
  int exact_processes = 0;
  int escaped_processes = 0;
  std::vector<std::int64_t> descendants_running;
  bool descendants_waited = true;
  double interval_s = 0;
  std::int64_t samples = 0;
  std::vector<RunDocDevice> devices;
  std::vector<RunDocProcess> processes;
  RunDocPidNamespace pid_namespace;
  std::string host;  // empty in files from before hosts were recorded
  std::optional<RunDocOwnRank> gpumem_rank;
  std::vector<RunDocRank> ranks;
  std::vector<RunDocBudget> budgets;
  bool budget_exceeded = false;  // any of `budgets` was exceeded
};

// The document of a finished run: every figure as the library decides it (command_peak, the
// rank rows), with the --max-peak verdicts `budgets` (budget_exceeded: any of them).
RunDocument run_document(const RunResult& result, std::vector<RunDocBudget> budgets);

// The document as the text `gpumem run --json` writes (two-space indent, a final line break,
// bytes that are not UTF-8 replaced by U+FFFD).
std::string run_document_text(const RunDocument& document);

// What the reader keeps: the whole document, or only what `gpumem report` and `gpumem diff` use
// (`summary`: host, gpumem_rank.rank, command, exit_code, elapsed_s, interval_s, the times and
// mode; per device its ordinal, NVML index, name, UUID, total and peak bytes; per rank its
// numbers, device, UUID, peak bytes and how measured), every other field at its default: a
// file's memory then does not grow with its processes, and each of 10k files is read at the
// cost of its headline figures.
enum class RunParts { whole, summary };

// Reads and checks `path` (a file of at most 64 MiB); nullopt with `error` naming the file and
// what is wrong with it (unreadable, not JSON or cut short, another schema or version, a field
// missing or mistyped, by its path). Fields that older gpumem.run/1 files lack read as their
// defaults above.
std::optional<RunDocument> read_run_document(const std::string& path, std::string* error,
                                             RunParts parts = RunParts::whole);

}  // namespace gpumem::run

#pragma GCC visibility pop

// Not exported: what gpumem's tools do not use (the library's own tests link its objects).
namespace gpumem::run {

// The document as JSON (run_document_text's).
nlohmann::ordered_json run_document_json(const RunDocument& document);
// The same from text already read (`path` names it in errors).
std::optional<RunDocument> parse_run_document(std::string_view text, const std::string& path,
                                              std::string* error, RunParts parts = RunParts::whole);

}  // namespace gpumem::run
