#include "report_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace gpumem::cli {
namespace {

// A report is a few hundred bytes per rank and device; anything this large is something else.
constexpr std::int64_t kMaxReportFile = 256ll << 20;

// A field that is not what the schema says: its path in the document, and what was expected.
struct BadReportField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const nlohmann::json& report_field(const nlohmann::json& object, const std::string& where,
                                   const char* name) {
  const auto found = object.find(name);
  if (found == object.end()) throw BadReportField(where + name + ": missing");
  return *found;
}

std::int64_t report_bytes(const nlohmann::json& object, const std::string& where,
                          const char* name) {
  const nlohmann::json& value = report_field(object, where, name);
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
    throw BadReportField(where + name + ": expected a number of bytes, found " + value.dump());
  return value.get<std::int64_t>();
}

std::optional<int> report_int(const nlohmann::json& object, const std::string& where,
                              const char* name) {
  const nlohmann::json& value = report_field(object, where, name);
  if (value.is_null()) return std::nullopt;
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
      value.get<std::int64_t>() > INT32_MAX)
    throw BadReportField(where + name + ": expected an integer, found " + value.dump());
  return value.get<int>();
}

// A string, or "" for null.
std::string report_string(const nlohmann::json& object, const std::string& where,
                          const char* name) {
  const nlohmann::json& value = report_field(object, where, name);
  if (value.is_null()) return {};
  if (!value.is_string())
    throw BadReportField(where + name + ": expected a string, found " + value.dump());
  return value.get<std::string>();
}

const nlohmann::json& report_list(const nlohmann::json& object, const char* name) {
  const nlohmann::json& value = report_field(object, "", name);
  if (!value.is_array()) throw BadReportField(std::string(name) + ": expected a list");
  return value;
}

std::string list_element(const char* list, std::size_t index) {
  return std::string(list) + "[" + std::to_string(index) + "].";
}

ReportFile report_from_json(const nlohmann::json& document, const std::string& path) {
  ReportFile report;
  report.path = path;
  report.mode = report_string(document, "", "mode");
  const nlohmann::json& devices = report_list(document, "devices");
  for (std::size_t index = 0; index < devices.size(); ++index) {
    const std::string where = list_element("devices", index);
    if (!devices[index].is_object()) throw BadReportField(where + " expected an object");
    ReportFileDevice device;
    device.key = report_string(devices[index], where, "key");
    device.uuid = report_string(devices[index], where, "uuid");
    device.node = report_string(devices[index], where, "node");
    const std::optional<int> ordinal = report_int(devices[index], where, "device");
    if (!ordinal) throw BadReportField(where + "device: expected an integer, found null");
    device.device = *ordinal;
    device.name = report_string(devices[index], where, "name");
    device.peak_bytes = report_bytes(devices[index], where, "peak_bytes");
    report.devices.push_back(std::move(device));
  }
  const nlohmann::json& ranks = report_list(document, "ranks");
  for (std::size_t index = 0; index < ranks.size(); ++index) {
    const std::string where = list_element("ranks", index);
    if (!ranks[index].is_object()) throw BadReportField(where + " expected an object");
    ReportFileRank rank;
    rank.rank = report_int(ranks[index], where, "rank");
    rank.local_rank = report_int(ranks[index], where, "local_rank");
    if (!rank.rank && !rank.local_rank)
      throw BadReportField(where + "rank: neither rank nor local_rank");
    rank.node = report_string(ranks[index], where, "node");
    rank.device = report_int(ranks[index], where, "device");
    rank.peak_bytes = report_bytes(ranks[index], where, "peak_bytes");
    report.ranks.push_back(std::move(rank));
  }
  return report;
}

}  // namespace

std::optional<ReportFile> parse_report_file(const std::string& content, const std::string& path,
                                            std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<ReportFile> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(content);
  } catch (const nlohmann::json::parse_error& bad) {
    return fail("not valid JSON at byte " + std::to_string(bad.byte));
  } catch (const nlohmann::json::exception& bad) {
    return fail(std::string("not valid JSON: ") + bad.what());
  }
  if (!document.is_object()) return fail("not a gpumem report (not a JSON object)");
  const auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string())
    return fail(std::string("not a gpumem report (no \"schema\"; gpumem report --json writes ") +
                kReportSchema + ")");
  const std::string name = schema->get<std::string>();
  if (name != kReportSchema)
    return fail("schema " + name + " is " +
                (name.rfind("gpumem.report/", 0) == 0 ? "a version this gpumem does not read"
                                                      : "not a report") +
                " (it reads " + kReportSchema + ")");
  try {
    return report_from_json(document, path);
  } catch (const BadReportField& bad) {
    return fail(bad.what());
  } catch (const nlohmann::json::exception& bad) {
    return fail(bad.what());
  }
}

std::optional<ReportFile> read_report_file(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<ReportFile> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (info.st_size > kMaxReportFile) return fail("too large for a report");
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  std::stringstream content;
  content << file.rdbuf();
  if (file.bad()) return fail("cannot be read");
  return parse_report_file(content.str(), path, error);
}

}  // namespace gpumem::cli
