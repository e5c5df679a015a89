#include "run_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace gpumem::cli {
namespace {

// A run file is a few kilobytes per device and process; anything this large is something else.
constexpr std::int64_t kMaxRunFile = 64ll << 20;

// A field that is not what the schema says: its path in the document, and what was expected.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const nlohmann::json& field(const nlohmann::json& object, const std::string& where,
                            const char* name) {
  const auto found = object.find(name);
  if (found == object.end()) throw BadField(where + name + ": missing");
  return *found;
}

std::int64_t bytes(const nlohmann::json& object, const std::string& where, const char* name) {
  const nlohmann::json& value = field(object, where, name);
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
    throw BadField(where + name + ": expected a number of bytes, found " + value.dump());
  return value.get<std::int64_t>();
}

std::optional<int> optional_int(const nlohmann::json& object, const std::string& where,
                                const char* name, bool required = false) {
  const auto found = object.find(name);
  if (found == object.end()) {
    if (required) throw BadField(where + name + ": missing");
    return std::nullopt;
  }
  if (found->is_null()) return std::nullopt;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 0 ||
      found->get<std::int64_t>() > INT32_MAX)
    throw BadField(where + name + ": expected an integer, found " + found->dump());
  return found->get<int>();
}

std::string text(const nlohmann::json& object, const std::string& where, const char* name,
                 bool required = true) {
  const auto found = object.find(name);
  if (found == object.end() || found->is_null()) {
    if (required) throw BadField(where + name + ": missing");
    return {};
  }
  if (!found->is_string())
    throw BadField(where + name + ": expected a string, found " + found->dump());
  return found->get<std::string>();
}

double seconds(const nlohmann::json& object, const std::string& where, const char* name) {
  const nlohmann::json& value = field(object, where, name);
  if (!value.is_number())
    throw BadField(where + name + ": expected seconds, found " + value.dump());
  return value.get<double>();
}

const nlohmann::json& array(const nlohmann::json& object, const std::string& where,
                            const char* name) {
  const nlohmann::json& value = field(object, where, name);
  if (!value.is_array()) throw BadField(where + name + ": expected a list");
  return value;
}

RunFile from_json(const nlohmann::json& document, const std::string& path) {
  RunFile run;
  run.path = path;
  run.host = text(document, "", "host", false);
  if (const auto own = document.find("gpumem_rank"); own != document.end() && !own->is_null()) {
    if (!own->is_object()) throw BadField("gpumem_rank: expected an object or null");
    run.gpumem_rank = optional_int(*own, "gpumem_rank.", "rank");
  }
  for (const nlohmann::json& word : array(document, "", "command")) {
    if (!word.is_string()) throw BadField("command: expected a list of strings");
    run.command.push_back(word.get<std::string>());
  }
  const nlohmann::json& exit_code = field(document, "", "exit_code");
  if (!exit_code.is_number_integer()) throw BadField("exit_code: expected an integer");
  run.exit_code = exit_code.get<int>();
  run.elapsed_s = seconds(document, "", "elapsed_s");
  run.interval_s = seconds(document, "", "interval_s");
  const bool has_start = document.contains("start_unix_s"),
             has_end = document.contains("end_unix_s");
  if (has_start != has_end)
    throw BadField(std::string(has_start ? "end_unix_s" : "start_unix_s") + ": missing");
  if (has_start) {
    run.start_unix_s = seconds(document, "", "start_unix_s");
    run.end_unix_s = seconds(document, "", "end_unix_s");
    if (*run.end_unix_s < *run.start_unix_s) throw BadField("end_unix_s: before start_unix_s");
  }
  run.mode = text(document, "", "mode");
  if (run.mode != "exact" && run.mode != "mixed" && run.mode != "sampled")
    throw BadField("mode: expected exact, mixed or sampled, found \"" + run.mode + "\"");
  const nlohmann::json& devices = array(document, "", "devices");
  for (std::size_t index = 0; index < devices.size(); ++index) {
    const nlohmann::json& device = devices[index];
    const std::string where = "devices[" + std::to_string(index) + "].";
    if (!device.is_object())
      throw BadField(where.substr(0, where.size() - 1) + ": expected an object");
    RunFileDevice entry;
    entry.device = *optional_int(device, where, "device", true);
    entry.nvml_index = optional_int(device, where, "nvml_index");
    entry.name = text(device, where, "name", false);
    entry.uuid = text(device, where, "uuid", false);
    entry.total_bytes = bytes(device, where, "total_bytes");
    entry.peak_bytes = bytes(device, where, "peak_bytes");
    run.devices.push_back(std::move(entry));
  }
  if (const auto ranks = document.find("ranks"); ranks != document.end()) {
    if (!ranks->is_array()) throw BadField("ranks: expected a list");
    for (std::size_t index = 0; index < ranks->size(); ++index) {
      const nlohmann::json& rank = (*ranks)[index];
      const std::string where = "ranks[" + std::to_string(index) + "].";
      if (!rank.is_object())
        throw BadField(where.substr(0, where.size() - 1) + ": expected an object");
      RunFileRank entry;
      entry.rank = optional_int(rank, where, "rank");
      entry.local_rank = optional_int(rank, where, "local_rank");
      if (!entry.rank && !entry.local_rank)
        throw BadField(where + "rank: neither rank nor local_rank");
      entry.device = optional_int(rank, where, "device");
      entry.uuid = text(rank, where, "uuid", false);
      entry.peak_bytes = bytes(rank, where, "peak_bytes");
      entry.measured = text(rank, where, "measured");
      if (entry.measured != "exact" && entry.measured != "sampled")
        throw BadField(where + "measured: expected exact or sampled");
      run.ranks.push_back(std::move(entry));
    }
  }
  return run;
}

}  // namespace

std::optional<RunFile> parse_run_file(const std::string& content, const std::string& path,
                                      std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<RunFile> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  if (content.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail("empty (a run still writing it, or cut short?)");
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(content);
  } catch (const nlohmann::json::parse_error& bad) {
    const std::string where = "at byte " + std::to_string(bad.byte);
    return fail(bad.byte >= content.size()
                    ? "not valid JSON: it ends early " + where + " (cut short?)"
                    : "not valid JSON " + where);
  } catch (const nlohmann::json::exception& bad) {  // a number no type holds, ...
    return fail(std::string("not valid JSON: ") + bad.what());
  }
  if (!document.is_object()) return fail("not a gpumem run file (not a JSON object)");
  const auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string())
    return fail(std::string("not a gpumem run file (no \"schema\"; gpumem run --json writes ") +
                kRunSchema + ")");
  const std::string name = schema->get<std::string>();
  if (name != kRunSchema) {
    if (name.rfind("gpumem.run/", 0) == 0)
      return fail("schema " + name + " is a version this gpumem does not read (it reads " +
                  kRunSchema + ")");
    return fail("schema " + name + " is not a run file (gpumem report reads " + kRunSchema +
                ", from gpumem run --json)");
  }
  try {
    return from_json(document, path);
  } catch (const BadField& bad) {
    return fail(bad.what());
  } catch (const nlohmann::json::exception& bad) {
    return fail(bad.what());
  }
}

std::optional<RunFile> read_run_file(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<RunFile> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return fail("is a folder, not a run file");
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (info.st_size > kMaxRunFile) return fail("too large for a run file");
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  std::stringstream content;
  content << file.rdbuf();
  if (file.bad()) return fail("cannot be read");
  return parse_run_file(content.str(), path, error);
}

}  // namespace gpumem::cli
