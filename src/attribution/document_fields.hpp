// Reading an attribution document's fields (docs/attribution.md), checked one by one: each
// error names the field by its path in the document ("snapshots[2].blocks[7].stack"). Used by
// the streaming reader (document_stream.cpp), which hands each element of the large lists over
// as soon as it is complete, and reads the rest from what it kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"

namespace gpumem::detail::attribution::fields {

using Json = nlohmann::json;
using Step = std::pair<double, std::int64_t>;

// A field that is not what the schema says: its path in the document, and what is wrong.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value as an error quotes it: JSON, cut to 60 characters.
std::string shown(const Json& value);

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

// The text field `name`, which must be one of `allowed`.
std::string one_of(const Object& object, const char* name,
                   std::initializer_list<const char*> allowed);

Device read_device(const Object& object);
Frame read_frame(const Object& object);
// `value`, the list of frame indices `where` names ("stacks[3]"), each below `frames`
// (nullopt: not known yet; check_indices checks them once it is).
std::vector<std::size_t> read_stack(const Json& value, const std::string& where,
                                    std::optional<std::size_t> frames);
Block read_block(const Object& object, std::size_t stacks);
// `streamed`: the snapshot's blocks, read one by one as they came (its own list then empty);
// null: read from the object.
Snapshot read_snapshot(const Object& object, std::size_t stacks, std::vector<std::string>& warnings,
                       std::vector<Block>* streamed);
// `value`, the step `where` names, after the steps already read.
Step read_step(const Json& value, const std::string& where, const std::vector<Step>& before);
// `streamed`: as for read_snapshot, the series' steps.
Timeline read_series(const Object& object, std::vector<Step>* streamed);

// Which of the document's lists the stream has read already, element by element, into the
// Document (their lists in the JSON it kept are then empty).
struct Streamed {
  bool frames = false;
  bool stacks = false;
  bool snapshots = false;
  bool timeline = false;
};

// The indices read before the list they point into was complete (a document whose "stacks"
// come before its "frames", or its "snapshots" before its "stacks"): each stack's frames when
// `frames`, each block's and failure's stack when `stacks`. Throws BadField for the first one
// out of range.
void check_indices(const Document& document, bool frames, bool stacks);

// Reads the rest of the document from `root` (what the stream kept) into `document`.
void finish_document(const Json& root, const Streamed& streamed, Document& document);

}  // namespace gpumem::detail::attribution::fields
