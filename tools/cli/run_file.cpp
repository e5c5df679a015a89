// gpumem.run/1 read back through the checked-JSON reader (gpumem/internal/checked_json.hpp):
// only the fields below are kept, the devices and ranks converted one by one as they come.
#include "run_file.hpp"

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::cli {
namespace {

namespace json = detail::json;
using json::BadField;
using json::Json;
using json::Object;

// A run file is a few kilobytes per device and process; anything this large is something else.
constexpr json::Caps kRunCaps{64ull << 20, 1u << 20};

// What is kept: the fields below, nothing else (docs/cli.md, "What the readers keep").
const json::Kept kRunKept{"host",
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

std::string check_run_schema(const Json& schema) {
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

RunFileDevice read_run_device(const Object& device) {
  RunFileDevice entry;
  entry.device = *device.optional_int("device", true);
  entry.nvml_index = device.optional_int("nvml_index");
  entry.name = device.optional_text("name").value_or("");
  entry.uuid = device.optional_text("uuid").value_or("");
  entry.total_bytes = device.byte_count("total_bytes");
  entry.peak_bytes = device.byte_count("peak_bytes");
  return entry;
}

RunFileRank read_run_rank(const Object& rank) {
  RunFileRank entry;
  entry.rank = rank.optional_int("rank");
  entry.local_rank = rank.optional_int("local_rank");
  if (!entry.rank && !entry.local_rank) rank.fail("rank", "neither rank nor local_rank");
  entry.device = rank.optional_int("device");
  entry.uuid = rank.optional_text("uuid").value_or("");
  entry.peak_bytes = rank.byte_count("peak_bytes");
  entry.measured = rank.text("measured");
  if (entry.measured != "exact" && entry.measured != "sampled")
    rank.fail("measured", "expected exact or sampled");
  return entry;
}

void read_run_rest(const Json& root, RunFile& run) {
  const Object document(root, "");
  run.host = document.optional_text("host").value_or("");
  if (const Json* own = document.find("gpumem_rank"); own != nullptr && !own->is_null())
    run.gpumem_rank = Object(*own, "gpumem_rank.").optional_int("rank");
  const Json& command = document.list("command");
  for (std::size_t at = 0; at < command.size(); ++at) {
    if (!command[at].is_string()) throw BadField("command: expected a list of strings");
    run.command.push_back(command[at].get<std::string>());
  }
  run.exit_code = static_cast<int>(
      *document.optional_integer("exit_code", INT32_MIN, INT32_MAX, /*required=*/true));
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
}

std::optional<RunFile> read_run(const std::string& path, std::string* error,
                                const std::optional<std::string_view>& text) {
  RunFile run;
  run.path = path;
  json::Shape shape;
  shape.what = "a gpumem run file";
  shape.check_schema = check_run_schema;
  shape.kept = &kRunKept;
  shape.streamed = {"devices", "ranks"};
  shape.restart = [&](const std::string& list) {
    if (list == "devices") run.devices.clear();
    if (list == "ranks") run.ranks.clear();
  };
  shape.element = [&](const std::string& list, std::size_t index, const Json& element) {
    const Object object(element, list + "[" + std::to_string(index) + "].");
    if (list == "devices") run.devices.push_back(read_run_device(object));
    if (list == "ranks") run.ranks.push_back(read_run_rank(object));
  };
  const std::optional<Json> root = text ? json::read_text(*text, path, shape, kRunCaps, error)
                                        : json::read_file(path, shape, kRunCaps, error);
  if (!root) return std::nullopt;
  try {
    read_run_rest(*root, run);
  } catch (const BadField& bad) {
    if (error != nullptr) *error = path + ": " + bad.what();
    return std::nullopt;
  }
  return run;
}

}  // namespace

std::optional<RunFile> parse_run_file(const std::string& content, const std::string& path,
                                      std::string* error) {
  return read_run(path, error, std::string_view(content));
}

std::optional<RunFile> read_run_file(const std::string& path, std::string* error) {
  return read_run(path, error, std::nullopt);
}

}  // namespace gpumem::cli
