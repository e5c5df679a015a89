// Which format an input is (its "schema", read from the stream up to that field and no further)
// and the peaks it holds, read through that format's one reader.
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "attribution/document.hpp"
#include "diff/diff.hpp"
#include "gpumem/internal/checked_json.hpp"
#include "gpumem/internal/report_document.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem::cli::diff {
namespace {

// A SAX handler that stops at the top-level "schema" string: a large attribution document is not
// parsed twice to learn what it is.
struct SchemaSniffer : nlohmann::json::json_sax_t {
  int depth = 0;
  bool root_object = false, schema_next = false, invalid = false;
  std::optional<std::string> schema;

  bool value() {
    schema_next = false;
    return true;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& text) override {
    if (schema_next && depth == 1) {
      schema = text;
      return false;  // found: read no further
    }
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (depth == 0) root_object = true;
    schema_next = false;
    ++depth;
    return true;
  }
  bool key(string_t& name) override {
    schema_next = depth == 1 && name == "schema";
    return true;
  }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    schema_next = false;
    ++depth;
    return depth > 1;  // a root that is a list is no gpumem document
  }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override {
    invalid = true;
    return false;
  }
};

constexpr const char* kWhatDiffReads =
    "gpumem diff reads run files (gpumem.run/1), reports (gpumem.report/1), attribution "
    "documents (gpumem.attribution/1) and PyTorch memory snapshots";

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::vector<DevicePeak> attribution_peaks(const attribution::Document& document) {
  std::map<int, std::int64_t> highest;
  for (const attribution::Snapshot& snapshot : document.snapshots) {
    auto [at, inserted] = highest.emplace(snapshot.device, snapshot.level_bytes);
    if (!inserted && snapshot.level_bytes > at->second) at->second = snapshot.level_bytes;
  }
  std::vector<DevicePeak> peaks;
  for (const auto& [ordinal, bytes] : highest) {
    DevicePeak peak;
    peak.ordinal = ordinal;
    peak.peak_bytes = bytes;
    if (const attribution::Device* device = document.device(ordinal); device != nullptr) {
      peak.uuid = device->uuid;
      peak.name = device->name;
    }
    peaks.push_back(std::move(peak));
  }
  return peaks;
}

std::optional<Input> read_input(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Input> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  std::ifstream stream;
  // The largest format's cap (an attribution document's): each reader then applies its own.
  const std::optional<std::uint64_t> size =
      detail::json::open_file(path, "a file", 2ull << 30, stream, error);
  if (!size) return std::nullopt;
  if (*size == 0) return fail("empty (a run still writing it, or cut short?)");
  namespace model = gpumem::detail::attribution;
  if (model::source_format(std::string(1, static_cast<char>(stream.peek()))) ==
      model::SourceFormat::torch_pickle) {
    // A PyTorch memory snapshot: an attribution source, read into the same model.
    Input input;
    input.path = path;
    input.schema = "torch snapshot";
    input.attribution = model::read_torch_snapshot(path, error);
    if (!input.attribution) return std::nullopt;
    input.devices = attribution_peaks(*input.attribution);
    return input;
  }
  // Through the checked reader's source: whitespace folded, a string over 1 MiB refused, so that
  // what comes before "schema" is never held whole.
  detail::json::BoundedSource source(stream, 1u << 20);
  SchemaSniffer sniffer;
  nlohmann::json::sax_parse(source.begin(), source.end(), &sniffer);
  if (source.overflowed() && !sniffer.schema)
    return fail("a string or number over 1 MiB before \"schema\" (at byte " +
                std::to_string(source.overflow_position()) + "): not a gpumem document (" +
                kWhatDiffReads + ")");
  if (sniffer.invalid && !sniffer.schema) return fail(std::string("not JSON: ") + kWhatDiffReads);
  if (!sniffer.root_object || !sniffer.schema)
    return fail(std::string("no \"schema\": not a gpumem document (") + kWhatDiffReads + ")");

  Input input;
  input.path = path;
  input.schema = *sniffer.schema;
  std::string why;
  if (starts_with(input.schema, "gpumem.run/")) {
    std::optional<run::RunDocument> run =
        run::read_run_document(path, &why, run::RunParts::summary);
    if (!run) {
      if (error != nullptr) *error = why;
      return std::nullopt;
    }
    for (const run::RunDocDevice& device : run->devices)
      input.devices.push_back({device.uuid, "", device.device, device.name, device.peak_bytes});
    for (const run::RunDocRank& rank : run->ranks)
      input.ranks.push_back({rank.rank, rank.local_rank, run->host, rank.peak_bytes});
    return input;
  }
  if (starts_with(input.schema, "gpumem.report/")) {
    std::optional<run::JobReport> report = run::read_report_document(path, &why);
    if (!report) {
      if (error != nullptr) *error = why;
      return std::nullopt;
    }
    for (const run::JobDevice& device : report->devices)
      input.devices.push_back(
          {device.uuid, device.node, device.device, device.name, device.peak_bytes});
    for (const run::JobRank& rank : report->ranks)
      input.ranks.push_back({rank.rank, rank.local_rank, rank.node, rank.peak_bytes});
    return input;
  }
  if (starts_with(input.schema, "gpumem.attribution/")) {
    input.attribution = attribution::read_document(path, &why);
    if (!input.attribution) {
      if (error != nullptr) *error = why;
      return std::nullopt;
    }
    input.devices = attribution_peaks(*input.attribution);
    return input;
  }
  return fail("schema " + input.schema + " is none gpumem diff compares (" + kWhatDiffReads + ")");
}

}  // namespace gpumem::cli::diff
