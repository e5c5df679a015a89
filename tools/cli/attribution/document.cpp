#include "attribution/document.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "format.hpp"

namespace gpumem::cli::attribution {
namespace {

using Json = nlohmann::json;

// A million live blocks take about 150 MB of JSON; this leaves room for ten times as many.
constexpr std::int64_t kMaxDocument = 2ll << 30;

// A field that is not what the schema says: its path in the document, and what is wrong.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// A JSON object being read, with its path in the document for errors ("snapshots[2].").
class Object {
 public:
  Object(const Json& value, std::string where) : value_(value), where_(std::move(where)) {
    if (!value_.is_object()) fail_here("expected an object, found " + shown(value_));
  }

  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const char* name, const std::string& why) const {
    throw BadField(where_ + name + ": " + why);
  }

  const Json* find(const char* name) const {
    const auto found = value_.find(name);
    return found == value_.end() ? nullptr : &*found;
  }

  const Json& get(const char* name) const {
    const Json* value = find(name);
    if (value == nullptr) fail(name, "missing");
    return *value;
  }

  std::optional<std::int64_t> optional_integer(const char* name, std::int64_t min, std::int64_t max,
                                               bool required = false) const {
    const Json* value = find(name);
    if (value == nullptr || value->is_null()) {
      if (required) fail(name, value == nullptr ? "missing" : "expected an integer, found null");
      return std::nullopt;
    }
    const bool fits = value->is_number_integer() &&
                      !(value->is_number_unsigned() &&
                        value->get<std::uint64_t>() >
                            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    if (!fits || value->get<std::int64_t>() < min || value->get<std::int64_t>() > max)
      fail(name, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                     ", found " + shown(*value));
    return value->get<std::int64_t>();
  }

  std::int64_t bytes(const char* name) const {
    return *optional_integer(name, 0, std::numeric_limits<std::int64_t>::max(), true);
  }

  std::optional<std::int64_t> optional_bytes(const char* name) const {
    return optional_integer(name, 0, std::numeric_limits<std::int64_t>::max());
  }

  // An index into a list of `count` (`what` names the list in errors).
  std::optional<std::size_t> index(const char* name, std::size_t count, const char* what) const {
    const std::optional<std::int64_t> value =
        optional_integer(name, 0, std::numeric_limits<std::int64_t>::max());
    if (!value) return std::nullopt;
    if (static_cast<std::uint64_t>(*value) >= count)
      fail(name, std::to_string(*value) + " is out of range (" + std::to_string(count) + " " +
                     what + ")");
    return static_cast<std::size_t>(*value);
  }

  std::optional<std::string> optional_text(const char* name) const {
    const Json* value = find(name);
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_string()) fail(name, "expected a string, found " + shown(*value));
    return value->get<std::string>();
  }

  std::string text(const char* name) const {
    const std::optional<std::string> value = optional_text(name);
    if (!value) fail(name, find(name) == nullptr ? "missing" : "expected a string, found null");
    return *value;
  }

  double seconds(const char* name) const {
    const Json& value = get(name);
    if (!value.is_number()) fail(name, "expected seconds, found " + shown(value));
    return value.get<double>();
  }

  std::optional<double> optional_seconds(const char* name) const {
    const Json* value = find(name);
    if (value == nullptr || value->is_null()) return std::nullopt;
    return seconds(name);
  }

  std::optional<bool> optional_flag(const char* name) const {
    const Json* value = find(name);
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_boolean()) fail(name, "expected true or false, found " + shown(*value));
    return value->get<bool>();
  }

  const Json& list(const char* name, bool required = true) const {
    static const Json empty = Json::array();
    const Json* value = find(name);
    if (value == nullptr || (!required && value->is_null())) {
      if (required) fail(name, "missing");
      return empty;
    }
    if (!value->is_array()) fail(name, "expected a list, found " + shown(*value));
    return *value;
  }

  std::string item(const char* name, std::size_t at) const {
    return where_ + name + "[" + std::to_string(at) + "]";
  }

 private:
  [[noreturn]] void fail_here(const std::string& why) const {
    throw BadField(
        (where_.empty() ? std::string("the document") : where_.substr(0, where_.size() - 1)) +
        ": " + why);
  }

  const Json& value_;
  std::string where_;
};

std::string one_of(const Object& object, const char* name,
                   std::initializer_list<const char*> allowed) {
  const std::string value = object.text(name);
  std::string names;
  for (const char* candidate : allowed) {
    if (value == candidate) return value;
    names += std::string(names.empty() ? "" : ", ") + candidate;
  }
  object.fail(name, "expected one of " + names + ", found \"" + value + "\"");
}

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

Frame read_frame(const Object& object) {
  Frame frame;
  frame.function = object.optional_text("function");
  frame.file = object.optional_text("file");
  frame.line = object.optional_integer("line", 0, kMaxInt);
  frame.module = object.optional_text("module");
  frame.address = object.optional_text("address");
  frame.language = one_of(object, "language", {"native", "python"});
  return frame;
}

Block read_block(const Object& object, std::size_t stacks) {
  Block block;
  block.address = object.text("address");
  block.bytes = object.bytes("bytes");
  block.kind = one_of(object, "kind", {"device", "vmm", "pool", "managed", "graph"});
  block.age_s = object.seconds("age_s");
  block.stack = object.index("stack", stacks, "stacks");
  block.pid = object.optional_integer("pid", 0, kMaxInt);
  return block;
}

Snapshot read_snapshot(const Object& object, std::size_t stacks,
                       std::vector<std::string>& warnings) {
  Snapshot snapshot;
  snapshot.what = one_of(object, "what", {"peak", "oom"});
  snapshot.scope = object.optional_text("scope");
  snapshot.pid = object.optional_integer("pid", 0, kMaxInt);
  snapshot.device = static_cast<int>(*object.optional_integer("device", 0, kMaxInt, true));
  snapshot.time_s = object.seconds("time_s");
  snapshot.monotonic_ns =
      object.optional_integer("monotonic_ns", std::numeric_limits<std::int64_t>::min(),
                              std::numeric_limits<std::int64_t>::max());
  snapshot.level_bytes = object.bytes("level_bytes");
  snapshot.live_bytes = object.bytes("live_bytes");
  const Json& blocks = object.list("blocks");
  snapshot.blocks.reserve(blocks.size());
  std::int64_t sum = 0;
  for (std::size_t at = 0; at < blocks.size(); ++at) {
    snapshot.blocks.push_back(
        read_block(Object(blocks[at], object.item("blocks", at) + "."), stacks));
    if (__builtin_add_overflow(sum, snapshot.blocks.back().bytes, &sum))
      object.fail("blocks", "the blocks' bytes add up to more than any size");
  }
  if (sum != snapshot.live_bytes)
    object.fail("live_bytes", std::to_string(snapshot.live_bytes) +
                                  " is not the sum of blocks[].bytes (" + std::to_string(sum) +
                                  ")");
  if (snapshot.level_bytes < snapshot.live_bytes)
    warnings.push_back(object.where() + "level_bytes: " + format_bytes(snapshot.level_bytes) +
                       " is below the " + format_bytes(snapshot.live_bytes) +
                       " its blocks hold; the blocks are shown in full");
  if (const Json* failure = object.find("failure"); failure != nullptr && !failure->is_null()) {
    const Object entry(*failure, object.where() + "failure.");
    snapshot.failure = Failure{entry.bytes("bytes"),
                               one_of(entry, "kind", {"device", "vmm", "pool", "managed", "graph"}),
                               entry.index("stack", stacks, "stacks"),
                               entry.text("error"),
                               entry.bytes("free_bytes"),
                               entry.bytes("total_bytes")};
  }
  const Json& others = object.list("other_processes", false);
  for (std::size_t at = 0; at < others.size(); ++at) {
    const Object entry(others[at], object.item("other_processes", at) + ".");
    snapshot.other_processes.push_back(
        {*entry.optional_integer("pid", 0, kMaxInt, true), entry.optional_text("name").value_or(""),
         entry.optional_bytes("used_bytes"), entry.optional_flag("in_run"),
         entry.optional_integer("rank", 0, kMaxInt)});
  }
  snapshot.other_processes_age_s = object.optional_seconds("other_processes_age_s");
  return snapshot;
}

Document from_json(const Json& json, const std::string& path) {
  const Object root(json, "");
  Document document;
  document.path = path;
  document.command = root.optional_text("command").value_or("");
  document.host = root.optional_text("host").value_or("");
  const Json& devices = root.list("devices");
  for (std::size_t at = 0; at < devices.size(); ++at) {
    const Object entry(devices[at], root.item("devices", at) + ".");
    document.devices.push_back(
        {static_cast<int>(*entry.optional_integer("ordinal", 0, kMaxInt, true)),
         entry.optional_text("uuid").value_or(""), entry.optional_text("name").value_or(""),
         entry.optional_bytes("total_bytes").value_or(0)});
  }
  const Json& frames = root.list("frames");
  document.frames.reserve(frames.size());
  for (std::size_t at = 0; at < frames.size(); ++at)
    document.frames.push_back(read_frame(Object(frames[at], root.item("frames", at) + ".")));
  const Json& stacks = root.list("stacks");
  document.stacks.reserve(stacks.size());
  for (std::size_t at = 0; at < stacks.size(); ++at) {
    const std::string where = root.item("stacks", at);
    if (!stacks[at].is_array()) throw BadField(where + ": expected a list of frame indices");
    std::vector<std::size_t> stack;
    stack.reserve(stacks[at].size());
    for (std::size_t depth = 0; depth < stacks[at].size(); ++depth) {
      const Json& frame = stacks[at][depth];
      if (!frame.is_number_unsigned() || frame.get<std::uint64_t>() >= document.frames.size())
        throw BadField(where + "[" + std::to_string(depth) + "]: " + shown(frame) +
                       " is not an index into frames (" + std::to_string(document.frames.size()) +
                       " frames)");
      stack.push_back(frame.get<std::size_t>());
    }
    document.stacks.push_back(std::move(stack));
  }
  const Json& snapshots = root.list("snapshots");
  for (std::size_t at = 0; at < snapshots.size(); ++at)
    document.snapshots.push_back(
        read_snapshot(Object(snapshots[at], root.item("snapshots", at) + "."),
                      document.stacks.size(), document.warnings));
  const Json& timeline = root.list("timeline", false);
  for (std::size_t at = 0; at < timeline.size(); ++at) {
    const Object entry(timeline[at], root.item("timeline", at) + ".");
    Timeline series;
    series.device = static_cast<int>(*entry.optional_integer("device", 0, kMaxInt, true));
    const Json& steps = entry.list("steps");
    for (std::size_t step = 0; step < steps.size(); ++step) {
      const std::string where = entry.item("steps", step);
      const Json& pair = steps[step];
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() ||
          !pair[1].is_number_integer() || pair[1].get<std::int64_t>() < 0 ||
          (pair[1].is_number_unsigned() &&
           pair[1].get<std::uint64_t>() >
               static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
        throw BadField(where + ": expected [time_s, bytes], found " + shown(pair));
      const double time = pair[0].get<double>();
      if (!series.steps.empty() && time < series.steps.back().first)
        throw BadField(where + ": time " + shown(pair[0]) + " is before the step ahead of it");
      series.steps.emplace_back(time, pair[1].get<std::int64_t>());
    }
    document.timeline.push_back(std::move(series));
  }
  return document;
}

}  // namespace

const Device* Document::device(int ordinal) const {
  for (const Device& entry : devices) {
    if (entry.ordinal == ordinal) return &entry;
  }
  return nullptr;
}

std::optional<Document> parse_document(const std::string& content, const std::string& path,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Document> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  if (content.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail("empty (still being written, or cut short?)");
  Json json;
  try {
    json = Json::parse(content);
  } catch (const Json::parse_error& bad) {
    const std::string where = "at byte " + std::to_string(bad.byte);
    return fail(bad.byte >= content.size()
                    ? "not valid JSON: it ends early " + where + " (cut short?)"
                    : "not valid JSON " + where);
  } catch (const Json::exception& bad) {  // a number no type holds, ...
    return fail(std::string("not valid JSON: ") + bad.what());
  }
  if (!json.is_object()) return fail("not a gpumem attribution document (not a JSON object)");
  const auto schema = json.find("schema");
  if (schema == json.end() || !schema->is_string())
    return fail(std::string("not a gpumem attribution document (no \"schema\"; expected ") +
                kSchema + ")");
  const std::string name = schema->get<std::string>();
  if (name != kSchema) {
    if (name.rfind("gpumem.attribution/", 0) == 0)
      return fail("schema " + name + " is a version this gpumem does not read (it reads " +
                  kSchema + ")");
    return fail("schema " + shown(*schema) + " is not an attribution document (expected " +
                kSchema + ", written by gpumem run --attribute)");
  }
  try {
    return from_json(json, path);
  } catch (const BadField& bad) {
    return fail(bad.what());
  } catch (const Json::exception& bad) {
    return fail(bad.what());
  } catch (const std::bad_alloc&) {
    return fail("too large to hold in memory");
  }
}

std::optional<Document> read_document(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Document> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return fail("is a folder, not an attribution document");
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (info.st_size > kMaxDocument) return fail("too large for an attribution document");
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  std::stringstream content;
  content << file.rdbuf();
  if (file.bad()) return fail("cannot be read");
  return parse_document(content.str(), path, error);
}

std::optional<std::size_t> choose_snapshot(const Document& document, const std::string& which,
                                           std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::size_t> {
    if (error != nullptr) *error = document.path + ": " + why;
    return std::nullopt;
  };
  const auto& snapshots = document.snapshots;
  if (which == "peak" || which == "oom") {
    std::optional<std::size_t> chosen;
    for (std::size_t at = 0; at < snapshots.size(); ++at) {
      if (snapshots[at].what != which) continue;
      if (which == "oom") return at;
      if (!chosen || snapshots[at].level_bytes > snapshots[*chosen].level_bytes) chosen = at;
    }
    if (!chosen)
      return fail("no " + std::string(which == "oom" ? "out-of-memory" : "peak") + " snapshot (" +
                  std::to_string(snapshots.size()) + " snapshots)");
    return chosen;
  }
  if (which.empty() || which.find_first_not_of("0123456789") != std::string::npos ||
      which.size() > 18)
    return fail("--snapshot " + which + ": expected peak, oom or a snapshot's index");
  const std::size_t index = std::stoull(which);
  if (index >= snapshots.size())
    return fail("--snapshot " + which + " is out of range (" + std::to_string(snapshots.size()) +
                " snapshots" +
                (snapshots.empty() ? "" : ": 0 to " + std::to_string(snapshots.size() - 1)) + ")");
  return index;
}

std::string describe(const Document& document, const Snapshot& snapshot) {
  std::string text = snapshot.what == "oom" ? "out-of-memory failure" : "peak";
  if (snapshot.scope) text += " of scope " + *snapshot.scope;
  text += " on GPU " + std::to_string(snapshot.device);
  if (const Device* device = document.device(snapshot.device);
      device != nullptr && !device->name.empty())
    text += " (" + device->name + ")";
  if (snapshot.pid) text += ", pid " + std::to_string(*snapshot.pid);
  text += ", at " + format_seconds(snapshot.time_s);
  return text;
}

std::string frame_function(const Frame& frame) {
  if (frame.function) return *frame.function;
  if (frame.address) return *frame.address;
  return "??";
}

std::string frame_label(const Frame& frame) {
  if (frame.function) {
    if (!frame.file) return *frame.function;
    return *frame.function + " (" + *frame.file +
           (frame.line ? ":" + std::to_string(*frame.line) : std::string()) + ")";
  }
  std::string where = frame.module.value_or("");
  if (frame.address) where += (where.empty() ? "" : "+") + *frame.address;
  return where.empty() ? "??" : "?? (" + where + ")";
}

}  // namespace gpumem::cli::attribution
