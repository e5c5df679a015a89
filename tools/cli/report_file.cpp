// gpumem.report/1 read back through the checked-JSON reader (gpumem/internal/checked_json.hpp):
// only what a comparison needs is kept, the devices and ranks converted one by one as they come.
#include "report_file.hpp"

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::cli {
namespace {

namespace json = detail::json;
using json::BadField;
using json::Json;
using json::Object;

// A report is a few hundred bytes per rank and device; anything this large is something else.
constexpr json::Caps kReportCaps{256ull << 20, 1u << 20};

// What is kept: the fields below, nothing else (docs/cli.md, "What the readers keep").
const json::Kept kReportKept{"mode",
                             "devices",
                             "devices[]",
                             "devices[].key",
                             "devices[].uuid",
                             "devices[].node",
                             "devices[].device",
                             "devices[].name",
                             "devices[].peak_bytes",
                             "ranks",
                             "ranks[]",
                             "ranks[].rank",
                             "ranks[].local_rank",
                             "ranks[].node",
                             "ranks[].device",
                             "ranks[].peak_bytes"};

std::string check_report_schema(const Json& schema) {
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
std::string text_or_null(const Object& object, const char* name) {
  object.get(name);
  return object.optional_text(name).value_or("");
}

std::optional<int> int_or_null(const Object& object, const char* name) {
  object.get(name);
  return object.optional_int(name);
}

ReportFileDevice read_report_device(const Object& object) {
  ReportFileDevice device;
  device.key = text_or_null(object, "key");
  device.uuid = text_or_null(object, "uuid");
  device.node = text_or_null(object, "node");
  device.device = *object.optional_int("device", true);
  device.name = text_or_null(object, "name");
  device.peak_bytes = object.byte_count("peak_bytes");
  return device;
}

ReportFileRank read_report_rank(const Object& object) {
  ReportFileRank rank;
  rank.rank = int_or_null(object, "rank");
  rank.local_rank = int_or_null(object, "local_rank");
  if (!rank.rank && !rank.local_rank) object.fail("rank", "neither rank nor local_rank");
  rank.node = text_or_null(object, "node");
  rank.device = int_or_null(object, "device");
  rank.peak_bytes = object.byte_count("peak_bytes");
  return rank;
}

std::optional<ReportFile> read_report(const std::string& path, std::string* error,
                                      const std::optional<std::string_view>& text) {
  ReportFile report;
  report.path = path;
  json::Shape shape;
  shape.what = "a gpumem report";
  shape.check_schema = check_report_schema;
  shape.kept = &kReportKept;
  shape.streamed = {"devices", "ranks"};
  shape.restart = [&](const std::string& list) {
    if (list == "devices") report.devices.clear();
    if (list == "ranks") report.ranks.clear();
  };
  shape.element = [&](const std::string& list, std::size_t index, const Json& element) {
    const Object object(element, list + "[" + std::to_string(index) + "].");
    if (list == "devices") report.devices.push_back(read_report_device(object));
    if (list == "ranks") report.ranks.push_back(read_report_rank(object));
  };
  const std::optional<Json> root = text ? json::read_text(*text, path, shape, kReportCaps, error)
                                        : json::read_file(path, shape, kReportCaps, error);
  if (!root) return std::nullopt;
  try {
    const Object document(*root, "");
    report.mode = text_or_null(document, "mode");
    document.list("devices");
    document.list("ranks");
  } catch (const BadField& bad) {
    if (error != nullptr) *error = path + ": " + bad.what();
    return std::nullopt;
  }
  return report;
}

}  // namespace

std::optional<ReportFile> parse_report_file(const std::string& content, const std::string& path,
                                            std::string* error) {
  return read_report(path, error, std::string_view(content));
}

std::optional<ReportFile> read_report_file(const std::string& path, std::string* error) {
  return read_report(path, error, std::nullopt);
}

}  // namespace gpumem::cli
