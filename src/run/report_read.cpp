// gpumem.report/1 read back through the checked-JSON reader (gpumem/internal/checked_json.hpp):
// the one reader of the format (report_document.hpp). Inputs, ranks, nodes and devices are
// converted one by one as they come; the references between them (a device's top rank, a node's
// peak device, the job's maximum) are resolved once all are read. A field an older report lacks
// reads as its default.
#include <limits>
#include <unordered_map>

#include "gpumem/internal/checked_json.hpp"
#include "gpumem/internal/report_document.hpp"

namespace gpumem::run {
namespace {

namespace rj = detail::json;

// A report is a few hundred bytes per rank and device; anything this large is something else.
constexpr rj::Caps kReportDocCaps{256ull << 20, 1u << 20};

const rj::Kept kReportKept{"quantity", "mode",  "maximum", "inputs",  "inputs[]",  "ranks",
                           "ranks[]",  "nodes", "nodes[]", "devices", "devices[]", "warnings"};

std::string check_report_document_schema(const rj::Json& schema) {
  if (!schema.is_string())
    return std::string("not a gpumem report (no \"schema\"; gpumem report --json writes ") +
           kReportSchema + ")";
  const std::string& name = schema.get_ref<const std::string&>();
  if (name == kReportSchema) return {};
  return "schema " + name + " is " +
         (name.rfind("gpumem.report/", 0) == 0 ? "a version this gpumem does not read"
                                               : "not a report") +
         " (it reads " + kReportSchema + ")";
}

// A string, or "" for null; required.
std::string report_text_or_null(const rj::Object& object, const char* name) {
  object.get(name);
  return object.optional_text(name).value_or("");
}

std::optional<int> report_int_or_null(const rj::Object& object, const char* name) {
  object.get(name);
  return object.optional_int(name);
}

int report_count(const rj::Object& object, const char* name) {
  return object.optional_int(name).value_or(0);
}

// A reference to a rank ({"rank", "local_rank"}), as written: null or the two numbers.
struct ReportRankReference {
  std::optional<int> rank, local_rank;
};
std::optional<ReportRankReference> read_rank_reference(const rj::Object& object, const char* name) {
  const rj::Json* value = object.find(name);
  if (value == nullptr || value->is_null()) return std::nullopt;
  const rj::Object reference(*value, object.where() + name + ".");
  return ReportRankReference{reference.optional_int("rank"), reference.optional_int("local_rank")};
}

JobInput report_read_input(const rj::Object& object) {
  JobInput input;
  input.path = object.optional_text("file").value_or("");
  input.node = object.optional_text("node").value_or("");
  input.gpumem_rank = object.optional_int("gpumem_rank");
  input.mode = object.optional_text("mode").value_or("");
  input.exit_code =
      static_cast<int>(object
                           .optional_integer("exit_code", std::numeric_limits<std::int32_t>::min(),
                                             std::numeric_limits<std::int32_t>::max())
                           .value_or(0));
  input.elapsed_s = object.optional_seconds("elapsed_s").value_or(0);
  input.start_unix_s = object.optional_seconds("start_unix_s");
  input.end_unix_s = object.optional_seconds("end_unix_s");
  return input;
}

JobRank report_read_rank(const rj::Object& object) {
  JobRank rank;
  rank.rank = report_int_or_null(object, "rank");
  rank.local_rank = report_int_or_null(object, "local_rank");
  if (!rank.rank && !rank.local_rank) object.fail("rank", "neither rank nor local_rank");
  rank.node = report_text_or_null(object, "node");
  rank.device = report_int_or_null(object, "device");
  rank.peak_bytes = object.byte_count("peak_bytes");
  rank.file = object.optional_text("file").value_or("");
  rank.device_key = object.optional_text("device_key").value_or("");
  rank.device_name = object.optional_text("name").value_or("");
  rank.measured = object.optional_text("measured").value_or("");
  return rank;
}

JobDevice::Combined report_read_combined(const rj::Object& object) {
  if (!object.optional_text("combined")) return JobDevice::Combined::one;
  const std::string word =
      object.one_of("combined", {"one_run", "highest", "sum", "sum_overlap_unknown"});
  if (word == "highest") return JobDevice::Combined::highest;
  if (word == "sum") return JobDevice::Combined::sum;
  if (word == "sum_overlap_unknown") return JobDevice::Combined::overlap_unknown;
  return JobDevice::Combined::one;
}

JobDevice report_read_device(const rj::Object& object) {
  JobDevice device;
  device.key = report_text_or_null(object, "key");
  device.uuid = report_text_or_null(object, "uuid");
  device.node = report_text_or_null(object, "node");
  device.device = *object.optional_int("device", true);
  device.name = report_text_or_null(object, "name");
  device.peak_bytes = object.byte_count("peak_bytes");
  device.nvml_index = object.optional_int("nvml_index");
  device.total_bytes = object.optional_bytes("total_bytes").value_or(0);
  device.runs_using = report_count(object, "runs_using");
  device.combined = report_read_combined(object);
  device.runs_summed = report_count(object, "runs_summed");
  return device;
}

// What the report's elements refer to, by what the document names them with.
struct ReportReferences {
  std::vector<std::optional<ReportRankReference>> top_ranks;  // per device
  std::vector<std::optional<std::string>> node_peak_devices;  // per node, a device's key
  std::optional<std::string> maximum;                         // a device's key
};

void report_resolve(JobReport& report, const ReportReferences& references) {
  std::unordered_map<std::string, std::size_t> by_key;
  for (std::size_t at = 0; at < report.devices.size(); ++at)
    by_key.emplace(report.devices[at].key, at);
  auto device_named = [&](const std::string& key, const std::string& where) {
    const auto found = by_key.find(key);
    if (found == by_key.end()) throw rj::BadField(where + ": no device \"" + key + "\" in devices");
    return found->second;
  };
  for (std::size_t at = 0; at < report.devices.size(); ++at) {
    const std::optional<ReportRankReference>& wanted = references.top_ranks[at];
    if (!wanted) continue;
    // The rank on this device that the reference names (rank numbers repeat across jobs).
    for (std::size_t index = 0; index < report.ranks.size() && !report.devices[at].top_rank;
         ++index) {
      const JobRank& rank = report.ranks[index];
      if (rank.rank == wanted->rank && rank.local_rank == wanted->local_rank &&
          rank.device_key == report.devices[at].key)
        report.devices[at].top_rank = index;
    }
    if (!report.devices[at].top_rank)
      throw rj::BadField("devices[" + std::to_string(at) + "].top_rank: no such rank on " +
                         report.devices[at].key);
  }
  for (std::size_t at = 0; at < report.nodes.size(); ++at) {
    if (const auto& key = references.node_peak_devices[at])
      report.nodes[at].peak_device =
          device_named(*key, "nodes[" + std::to_string(at) + "].peak_device");
  }
  if (references.maximum) report.maximum = device_named(*references.maximum, "maximum.device_key");
}

std::optional<JobReport> report_read_document(const std::string& path, std::string* error,
                                              const std::optional<std::string_view>& text) {
  JobReport report;
  ReportReferences references;
  rj::Shape shape;
  shape.what = "a gpumem report";
  shape.check_schema = check_report_document_schema;
  shape.kept = &kReportKept;
  shape.streamed = {"inputs", "ranks", "nodes", "devices"};
  shape.restart = [&](const std::string& list) {
    if (list == "inputs") report.inputs.clear();
    if (list == "ranks") report.ranks.clear();
    if (list == "nodes") {
      report.nodes.clear();
      references.node_peak_devices.clear();
    }
    if (list == "devices") {
      report.devices.clear();
      references.top_ranks.clear();
    }
  };
  shape.element = [&](const std::string& list, const std::string& where, const rj::Json& element) {
    const rj::Object object(element, where + ".");
    if (list == "inputs") report.inputs.push_back(report_read_input(object));
    if (list == "ranks") report.ranks.push_back(report_read_rank(object));
    if (list == "devices") {
      report.devices.push_back(report_read_device(object));
      references.top_ranks.push_back(read_rank_reference(object, "top_rank"));
    }
    if (list == "nodes") {
      JobNode node;
      node.name = object.optional_text("node").value_or("");
      node.runs = report_count(object, "runs");
      node.ranks = report_count(object, "ranks");
      node.devices_used = report_count(object, "devices_used");
      node.mode = object.optional_text("mode").value_or("");
      node.peak_bytes = object.optional_bytes("peak_bytes").value_or(0);
      read_rank_reference(object, "peak_rank");  // the peak device's top rank: checked, not kept
      report.nodes.push_back(std::move(node));
      references.node_peak_devices.push_back(object.optional_text("peak_device"));
    }
  };
  const std::optional<rj::Json> root =
      text ? rj::read_text(*text, path, shape, kReportDocCaps, error)
           : rj::read_file(path, shape, kReportDocCaps, error);
  if (!root) return std::nullopt;
  try {
    const rj::Object document(*root, "");
    report.mode = report_text_or_null(document, "mode");
    document.list("devices");
    document.list("ranks");
    report.quantity = document.optional_text("quantity").value_or("process_footprint");
    if (const rj::Json* maximum = document.find("maximum");
        maximum != nullptr && !maximum->is_null()) {
      const rj::Object entry(*maximum, "maximum.");
      references.maximum = entry.text("device_key");
      read_rank_reference(entry, "rank");  // the device's top rank: checked, not kept
    }
    const rj::Json& warnings = document.list("warnings", /*required=*/false);
    for (std::size_t at = 0; at < warnings.size(); ++at) {
      if (!warnings[at].is_string())
        throw rj::BadField(document.item("warnings", at) + ": expected a string, found " +
                           rj::shown(warnings[at]));
      report.warnings.push_back(warnings[at].get<std::string>());
    }
    report_resolve(report, references);
  } catch (const rj::BadField& bad) {
    if (error != nullptr) *error = path + ": " + bad.what();
    return std::nullopt;
  }
  return report;
}

}  // namespace

std::optional<JobReport> parse_report_document(std::string_view text, const std::string& path,
                                               std::string* error) {
  return report_read_document(path, error, text);
}

std::optional<JobReport> read_report_document(const std::string& path, std::string* error) {
  return report_read_document(path, error, std::nullopt);
}

}  // namespace gpumem::run
