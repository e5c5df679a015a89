// gpumem.run/1 read back through the checked-JSON reader (gpumem/internal/checked_json.hpp): the
// one reader of the format (run_document.hpp). Devices, processes, ranks and budgets are
// converted one by one as they come; a field an older file lacks reads as its default.
#include <cstdint>
#include <limits>

#include "gpumem/internal/checked_json.hpp"
#include "gpumem/internal/run_document.hpp"

namespace gpumem::run {
namespace {

namespace cj = detail::json;

// A run file is a few kilobytes per device and process; anything this large is something else.
constexpr cj::Caps kRunDocCaps{64ull << 20, 1u << 20};
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

// What is kept (docs/cli.md, "What the readers keep"): the whole document, or its summary.
const cj::Kept kRunWhole{"command",
                         "exit_code",
                         "signal",
                         "elapsed_s",
                         "start_unix_s",
                         "end_unix_s",
                         "mode",
                         "requested_mode",
                         "fallback_reason",
                         "exact_processes",
                         "escaped_processes",
                         "descendants_running",
                         "descendants_waited",
                         "interval_s",
                         "samples",
                         "devices",
                         "devices[]",
                         "processes",
                         "processes[]",
                         "pid_namespace",
                         "host",
                         "gpumem_rank",
                         "ranks",
                         "ranks[]",
                         "budgets",
                         "budgets[]",
                         "budget_exceeded"};
const cj::Kept kRunSummary{"host",
                           "gpumem_rank",
                           "gpumem_rank.rank",
                           "command",
                           "exit_code",
                           "elapsed_s",
                           "interval_s",
                           "start_unix_s",
                           "end_unix_s",
                           "mode",
                           "devices",
                           "devices[]",
                           "devices[].device",
                           "devices[].nvml_index",
                           "devices[].name",
                           "devices[].uuid",
                           "devices[].total_bytes",
                           "devices[].peak_bytes",
                           "ranks",
                           "ranks[]",
                           "ranks[].rank",
                           "ranks[].local_rank",
                           "ranks[].device",
                           "ranks[].uuid",
                           "ranks[].peak_bytes",
                           "ranks[].measured"};

std::string check_run_document_schema(const cj::Json& schema) {
  if (!schema.is_string())
    return std::string("not a gpumem run file (no \"schema\"; gpumem run --json writes ") +
           kRunSchema + ")";
  const std::string& name = schema.get_ref<const std::string&>();
  if (name == kRunSchema) return {};
  if (name.rfind("gpumem.run/", 0) == 0)
    return "schema " + name + " is a version this gpumem does not read (it reads " + kRunSchema +
           ")";
  return "schema " + name + " is not a run file (gpumem report reads " + kRunSchema +
         ", from gpumem run --json)";
}

std::int64_t run_optional_count(const cj::Object& object, const char* name) {
  return object.optional_integer(name, 0, kMaxInt).value_or(0);
}

bool run_flag_or(const cj::Object& object, const char* name, bool otherwise) {
  return object.optional_flag(name).value_or(otherwise);
}

// A text field that, when present, is one of `allowed`; `otherwise` when absent or null.
std::string run_word_or(const cj::Object& object, const char* name,
                        std::initializer_list<const char*> allowed, const char* otherwise) {
  if (!object.optional_text(name)) return otherwise;
  return object.one_of(name, allowed);
}

std::vector<std::int64_t> run_pid_list(const cj::Object& object, const char* name) {
  std::vector<std::int64_t> pids;
  const cj::Json& list = object.list(name, /*required=*/false);
  for (std::size_t at = 0; at < list.size(); ++at) {
    if (!list[at].is_number_integer() || list[at].get<std::int64_t>() < 0 ||
        (list[at].is_number_unsigned() && list[at].get<std::uint64_t>() > std::uint64_t(kMaxInt)))
      throw cj::BadField(object.item(name, at) + ": expected a pid, found " + cj::shown(list[at]));
    pids.push_back(list[at].get<std::int64_t>());
  }
  return pids;
}

RunDocDevice run_read_device(const cj::Object& device) {
  RunDocDevice entry;
  entry.device = *device.optional_int("device", true);
  entry.nvml_index = device.optional_int("nvml_index");
  entry.name = device.optional_text("name").value_or("");
  entry.uuid = device.optional_text("uuid").value_or("");
  entry.total_bytes = device.byte_count("total_bytes");
  entry.peak_bytes = device.byte_count("peak_bytes");
  entry.quantity = device.optional_text("quantity").value_or("process_footprint");
  entry.peak_time_s = device.optional_seconds("peak_time_s").value_or(0);
  entry.exact_peak_bytes = device.optional_bytes("exact_peak_bytes");
  entry.peak_at_most_bytes = device.optional_bytes("peak_at_most_bytes");
  entry.exact_peak_at_most_bytes = device.optional_bytes("exact_peak_at_most_bytes");
  entry.sampled_peak_bytes = run_optional_count(device, "sampled_peak_bytes");
  entry.context_bytes = device.optional_bytes("context_bytes");
  entry.device_used_start_bytes = run_optional_count(device, "device_used_start_bytes");
  entry.device_used_peak_bytes = run_optional_count(device, "device_used_peak_bytes");
  entry.device_used_end_bytes = run_optional_count(device, "device_used_end_bytes");
  entry.unmapped_peak_bytes = run_optional_count(device, "unmapped_peak_bytes");
  entry.bounded_by_device_used = run_flag_or(device, "bounded_by_device_used", false);
  return entry;
}

RunDocProcess run_read_process(const cj::Object& process) {
  RunDocProcess entry;
  entry.pid = process.optional_integer("pid", 0, kMaxInt);
  entry.nvml_pid = run_optional_count(process, "nvml_pid");
  entry.name = process.optional_text("name").value_or("");
  entry.device = process.optional_int("device").value_or(0);
  entry.mode = run_word_or(process, "mode", {"exact", "sampled"}, "sampled");
  entry.reason = process.optional_text("reason");
  entry.sampled_peak_bytes = run_optional_count(process, "sampled_peak_bytes");
  entry.rank = process.optional_int("rank");
  entry.local_rank = process.optional_int("local_rank");
  return entry;
}

RunDocRank run_read_rank(const cj::Object& rank) {
  RunDocRank entry;
  entry.rank = rank.optional_int("rank");
  entry.local_rank = rank.optional_int("local_rank");
  if (!entry.rank && !entry.local_rank) rank.fail("rank", "neither rank nor local_rank");
  entry.device = rank.optional_int("device");
  entry.uuid = rank.optional_text("uuid");
  entry.peak_bytes = rank.byte_count("peak_bytes");
  entry.measured = rank.text("measured");
  if (entry.measured != "exact" && entry.measured != "sampled")
    rank.fail("measured", "expected exact or sampled");
  entry.pids = run_pid_list(rank, "pids");
  const cj::Json& devices = rank.list("devices", /*required=*/false);
  for (std::size_t at = 0; at < devices.size(); ++at) {
    const cj::Object cell(devices[at], rank.item("devices", at) + ".");
    entry.devices.push_back({*cell.optional_int("device", true),
                             cell.optional_text("uuid").value_or(""), cell.byte_count("peak_bytes"),
                             cell.one_of("measured", {"exact", "sampled"})});
  }
  return entry;
}

RunDocBudget run_read_budget(const cj::Object& budget) {
  RunDocBudget entry;
  entry.device = *budget.optional_int("device", true);
  entry.budget_bytes = budget.byte_count("budget_bytes");
  entry.peak_bytes = budget.byte_count("peak_bytes");
  entry.exceeded = run_flag_or(budget, "exceeded", false);
  entry.measured = budget.one_of("measured", {"exact", "mixed", "sampled"});
  entry.may_be_higher = run_flag_or(budget, "may_be_higher", false);
  entry.peak_at_most_bytes = budget.optional_bytes("peak_at_most_bytes");
  return entry;
}

void run_read_rest(const cj::Json& root, RunDocument& run) {
  const cj::Object document(root, "");
  run.host = document.optional_text("host").value_or("");
  if (const cj::Json* own = document.find("gpumem_rank"); own != nullptr && !own->is_null()) {
    const cj::Object rank(*own, "gpumem_rank.");
    run.gpumem_rank = RunDocOwnRank{rank.optional_int("rank"), rank.optional_int("local_rank"),
                                    rank.optional_text("variable").value_or("")};
  }
  const cj::Json& command = document.list("command");
  for (std::size_t at = 0; at < command.size(); ++at) {
    if (!command[at].is_string()) throw cj::BadField("command: expected a list of strings");
    run.command.push_back(command[at].get<std::string>());
  }
  run.exit_code = static_cast<int>(
      *document.optional_integer("exit_code", std::numeric_limits<std::int32_t>::min(),
                                 std::numeric_limits<std::int32_t>::max(), /*required=*/true));
  run.elapsed_s = document.seconds("elapsed_s");
  run.interval_s = document.seconds("interval_s");
  const bool has_start = document.find("start_unix_s") != nullptr,
             has_end = document.find("end_unix_s") != nullptr;
  if (has_start != has_end) document.fail(has_start ? "end_unix_s" : "start_unix_s", "missing");
  if (has_start) {
    run.start_unix_s = document.seconds("start_unix_s");
    run.end_unix_s = document.seconds("end_unix_s");
    if (*run.end_unix_s < *run.start_unix_s) document.fail("end_unix_s", "before start_unix_s");
  }
  run.mode = document.text("mode");
  if (run.mode != "exact" && run.mode != "mixed" && run.mode != "sampled")
    document.fail("mode", "expected exact, mixed or sampled, found \"" + run.mode + "\"");
  document.list("devices");  // required, even when empty
  document.list("ranks", /*required=*/false);
  run.signal = document.optional_text("signal");
  run.requested_mode =
      run_word_or(document, "requested_mode", {"auto", "exact", "sampled"}, "auto");
  run.fallback_reason = document.optional_text("fallback_reason");
  run.exact_processes = document.optional_int("exact_processes").value_or(0);
  run.escaped_processes = document.optional_int("escaped_processes").value_or(0);
  run.descendants_running = run_pid_list(document, "descendants_running");
  run.descendants_waited = run_flag_or(document, "descendants_waited", true);
  run.samples = run_optional_count(document, "samples");
  document.list("processes", /*required=*/false);
  document.list("budgets", /*required=*/false);
  if (const cj::Json* names = document.find("pid_namespace");
      names != nullptr && !names->is_null()) {
    const cj::Object pid_namespace(*names, "pid_namespace.");
    run.pid_namespace.nvml_pids =
        run_word_or(pid_namespace, "nvml_pids", {"own", "foreign"}, "own");
    run.pid_namespace.reason = pid_namespace.optional_text("reason");
    run.pid_namespace.matched = run_optional_count(pid_namespace, "matched");
    run.pid_namespace.unmatched = run_optional_count(pid_namespace, "unmatched");
    run.pid_namespace.nested = run_flag_or(pid_namespace, "nested", false);
  }
  run.budget_exceeded = run_flag_or(document, "budget_exceeded", false);
}

std::optional<RunDocument> run_read_document(const std::string& path, std::string* error,
                                             const std::optional<std::string_view>& text,
                                             RunParts parts) {
  RunDocument run;
  cj::Shape shape;
  shape.what = "a gpumem run file";
  shape.check_schema = check_run_document_schema;
  shape.kept = parts == RunParts::whole ? &kRunWhole : &kRunSummary;
  shape.streamed = {"devices", "processes", "ranks", "budgets"};
  shape.restart = [&](const std::string& list) {
    if (list == "devices") run.devices.clear();
    if (list == "processes") run.processes.clear();
    if (list == "ranks") run.ranks.clear();
    if (list == "budgets") run.budgets.clear();
  };
  shape.element = [&](const std::string& list, const std::string& where, const cj::Json& element) {
    const cj::Object object(element, where + ".");
    if (list == "devices") run.devices.push_back(run_read_device(object));
    if (list == "processes") run.processes.push_back(run_read_process(object));
    if (list == "ranks") run.ranks.push_back(run_read_rank(object));
    if (list == "budgets") run.budgets.push_back(run_read_budget(object));
  };
  const std::optional<cj::Json> root = text ? cj::read_text(*text, path, shape, kRunDocCaps, error)
                                            : cj::read_file(path, shape, kRunDocCaps, error);
  if (!root) return std::nullopt;
  try {
    run_read_rest(*root, run);
  } catch (const cj::BadField& bad) {
    if (error != nullptr) *error = path + ": " + bad.what();
    return std::nullopt;
  }
  return run;
}

}  // namespace

std::optional<RunDocument> parse_run_document(std::string_view text, const std::string& path,
                                              std::string* error, RunParts parts) {
  return run_read_document(path, error, text, parts);
}

std::optional<RunDocument> read_run_document(const std::string& path, std::string* error,
                                             RunParts parts) {
  return run_read_document(path, error, std::nullopt, parts);
}

}  // namespace gpumem::run
