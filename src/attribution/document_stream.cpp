#include "gpumem/internal/attribution_document.hpp"

#include <limits>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "attribution/document_fields.hpp"
#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::attribution {
namespace {

using fields::BadField;
namespace json = detail::json;
using fields::Json;
using fields::Object;
using fields::Step;

// Where a container sits in the document: the lists read element by element, and the elements
// that gather what was read of their own lists.
enum class Role {
  other,
  root,
  frames,
  stacks,
  snapshots,
  snapshot,
  blocks,
  timeline,
  series,
  steps
};

struct Level {
  Json* value = nullptr;
  Role role = Role::other;
  std::string key;        // an object's key being filled
  std::size_t count = 0;  // an array's elements so far (the last one's index + 1)
};

// Builds the JSON tree as nlohmann's own DOM parser does, except that each element of a list
// read element by element is converted as soon as it is complete and taken out of the tree.
class Reader final : public nlohmann::json_sax<Json> {
 public:
  Reader(const std::string& path, const json::BoundedSource& source) : source_(source) {
    document_.path = path;
  }

  bool null() override { return scalar(nullptr); }
  bool boolean(bool value) override { return scalar(value); }
  bool number_integer(number_integer_t value) override { return scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(value); }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return scalar(value);
  }
  bool string(string_t& value) override { return scalar(std::move(value)); }
  bool binary(binary_t& value) override { return scalar(std::move(value)); }
  bool start_object(std::size_t /*elements*/) override { return open(Json::value_t::object); }
  bool start_array(std::size_t /*elements*/) override { return open(Json::value_t::array); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& name) override {
    Level& level = levels_.back();
    // One name twice would keep the last value in a tree and both lists in a stream.
    if (level.role == Role::root && !root_keys_.insert(name).second)
      return fail_field("the document: \"" + name + "\" appears twice");
    level.key = std::move(name);
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    syntax_error_ = true;
    syntax_position_ = source_.position();
    // A number no type holds (1e999) is out_of_range, not a parse_error: said in words.
    if (dynamic_cast<const Json::parse_error*>(&error) == nullptr) syntax_what_ = error.what();
    return false;
  }

  // After the parser returned: the document, or the first error.
  std::optional<Document> finish(std::uint64_t size, std::string* error) {
    auto fail = [&](const std::string& why) -> std::optional<Document> {
      if (error != nullptr) *error = document_.path + ": " + why;
      return std::nullopt;
    };
    if (!error_.empty()) return fail(error_);
    if (source_.overflowed())
      return fail(where_now() + ": a string or number over " +
                  json::size_words(fields::kCaps.token_bytes) + " (at byte " +
                  std::to_string(source_.overflow_position()) + ")");
    if (syntax_error_)
      return fail(json::syntax_error(syntax_position_, size, any_value_, syntax_what_));
    if (!schema_checked_)
      return fail(std::string("not a gpumem attribution document (no \"schema\"; expected ") +
                  kSchema + ")");
    try {
      fields::finish_document(root_, streamed_, document_);
      fields::check_indices(document_, frames_deferred_, stacks_deferred_);
    } catch (const BadField& bad) {
      return fail(bad.what());
    } catch (const Json::exception& bad) {
      return fail(bad.what());
    }
    return std::move(document_);
  }

 private:
  // The new value's place: the root, the end of an array, or the object's current key.
  Json* add(Json&& value) {
    any_value_ = true;
    if (levels_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Level& parent = levels_.back();
    if (parent.value->is_array()) {
      auto& array = parent.value->get_ref<Json::array_t&>();
      array.push_back(std::move(value));
      ++parent.count;
      return &array.back();
    }
    Json& slot = parent.value->get_ref<Json::object_t&>()[parent.key];
    slot = std::move(value);
    return &slot;
  }

  bool not_an_object() {
    error_ = "not a gpumem attribution document (not a JSON object)";
    return false;
  }

  template <class Value>
  bool scalar(Value&& value) {
    if (levels_.empty()) {
      any_value_ = true;
      return not_an_object();
    }
    return completed(*add(Json(std::forward<Value>(value))));
  }

  Role role_of(bool array) const {
    if (levels_.empty()) return Role::root;
    const Level& parent = levels_.back();
    switch (parent.role) {
      case Role::root:
        if (!array) return Role::other;
        if (parent.key == "frames") return Role::frames;
        if (parent.key == "stacks") return Role::stacks;
        if (parent.key == "snapshots") return Role::snapshots;
        if (parent.key == "timeline") return Role::timeline;
        return Role::other;
      case Role::snapshots:
        return array ? Role::other : Role::snapshot;
      case Role::snapshot:
        return array && parent.key == "blocks" ? Role::blocks : Role::other;
      case Role::timeline:
        return array ? Role::other : Role::series;
      case Role::series:
        return array && parent.key == "steps" ? Role::steps : Role::other;
      default:
        return Role::other;
    }
  }

  bool open(Json::value_t type) {
    const bool array = type == Json::value_t::array;
    if (levels_.empty() && array) {
      any_value_ = true;
      return not_an_object();
    }
    const Role role = role_of(array);
    Json* value = add(Json(type));
    switch (role) {
      case Role::frames:
        streamed_.frames = true;
        break;
      case Role::stacks:
        streamed_.stacks = true;
        break;
      case Role::snapshots:
        streamed_.snapshots = true;
        break;
      case Role::timeline:
        streamed_.timeline = true;
        break;
      case Role::blocks:  // a name twice in one object: the last list stands, as in a tree
        blocks_.clear();
        blocks_streamed_ = true;
        break;
      case Role::steps:
        steps_.clear();
        steps_streamed_ = true;
        break;
      default:
        break;
    }
    levels_.push_back({value, role, {}, 0});
    return true;
  }

  bool close() {
    Json* value = levels_.back().value;
    levels_.pop_back();
    return completed(*value);
  }

  // The element `levels_[depth]` is filling: "snapshots[2]".
  std::string item(std::size_t depth, const char* list) const {
    return std::string(list) + "[" + std::to_string(levels_[depth].count - 1) + "]";
  }

  // `value` is complete; an element of a list read element by element is read now and taken
  // out of the tree.
  bool completed(Json& value) {
    if (levels_.empty()) return true;  // the root
    Level& parent = levels_.back();
    const std::size_t depth = levels_.size() - 1;
    if (parent.role == Role::root) {
      if (parent.key == "schema") return check_schema(value);
      if (parent.key == "frames") frames_done_ = true;
      if (parent.key == "stacks") stacks_done_ = true;
      return true;
    }
    if (parent.role == Role::other || parent.role == Role::snapshot || parent.role == Role::series)
      return true;
    // A field error held until the schema says what the document is: the rest is not read.
    if (held_.empty()) {
      try {
        read_element(parent.role, depth, value);
      } catch (const BadField& bad) {
        if (!fail_field(bad.what())) return false;
      } catch (const Json::exception& bad) {
        if (!fail_field(bad.what())) return false;
      }
    }
    parent.value->get_ref<Json::array_t&>().pop_back();
    return true;
  }

  void read_element(Role role, std::size_t depth, const Json& value) {
    switch (role) {
      case Role::frames:
        document_.frames.push_back(fields::read_frame(Object(value, item(depth, "frames") + ".")));
        break;
      case Role::stacks:
        // Frames not all read yet (a document in another order than gpumem writes): their
        // indices are checked at the end.
        frames_deferred_ = frames_deferred_ || !frames_done_;
        document_.stacks.push_back(fields::read_stack(
            value, item(depth, "stacks"),
            frames_done_ ? std::optional<std::size_t>(document_.frames.size()) : std::nullopt));
        break;
      case Role::blocks:  // levels: ... snapshots, snapshot, blocks
        stacks_deferred_ = stacks_deferred_ || !stacks_done_;
        blocks_.push_back(fields::read_block(
            Object(value, item(depth - 2, "snapshots") + "." + item(depth, "blocks") + "."),
            stacks()));
        break;
      case Role::snapshots: {
        stacks_deferred_ = stacks_deferred_ || !stacks_done_;
        std::vector<Block>* blocks = blocks_streamed_ ? &blocks_ : nullptr;
        blocks_streamed_ = false;
        document_.snapshots.push_back(fields::read_snapshot(
            Object(value, item(depth, "snapshots") + "."), stacks(), document_.warnings, blocks));
        blocks_.clear();
        break;
      }
      case Role::steps:
        steps_.push_back(fields::read_step(
            value, item(depth - 2, "timeline") + "." + item(depth, "steps"), steps_));
        break;
      case Role::timeline: {
        std::vector<Step>* steps = steps_streamed_ ? &steps_ : nullptr;
        steps_streamed_ = false;
        document_.timeline.push_back(
            fields::read_series(Object(value, item(depth, "timeline") + "."), steps));
        steps_.clear();
        break;
      }
      default:
        break;
    }
  }

  // How many stacks an index may point into: all of them once read, any number until then.
  std::size_t stacks() const {
    return stacks_done_ ? document_.stacks.size() : std::numeric_limits<std::size_t>::max();
  }

  // A field error stops the reading once the schema is known to be this one's; before, it is
  // held (the schema's own error comes first).
  bool fail_field(const std::string& why) {
    if (schema_checked_) {
      error_ = why;
      return false;
    }
    if (held_.empty()) held_ = why;
    return true;
  }

  bool check_schema(const Json& value) {
    if (!value.is_string()) {
      error_ = std::string("not a gpumem attribution document (no \"schema\"; expected ") +
               kSchema + ")";
      return false;
    }
    const std::string& name = value.get_ref<const std::string&>();
    if (name != kSchema) {
      error_ = name.rfind("gpumem.attribution/", 0) == 0
                   ? "schema " + name + " is a version this gpumem does not read (it reads " +
                         kSchema + ")"
                   : "schema " + fields::shown(value) +
                         " is not an attribution document (expected " + kSchema +
                         ", written by gpumem run --attribute)";
      return false;
    }
    schema_checked_ = true;
    if (!held_.empty()) {
      error_ = held_;
      return false;
    }
    return true;
  }

  // The path of the container the parser is in, as an error names it.
  std::string where_now() const {
    std::string path;
    for (std::size_t depth = 0; depth < levels_.size(); ++depth) {
      const Level& level = levels_[depth];
      if (level.value->is_array()) {  // an open element counted already, a scalar not yet
        path +=
            "[" + std::to_string(depth + 1 < levels_.size() ? level.count - 1 : level.count) + "]";
      } else if (!level.key.empty()) {
        path += (path.empty() ? "" : ".") + level.key;
      }
    }
    return path.empty() ? "the document" : path;
  }

  const json::BoundedSource& source_;
  Document document_;
  Json root_;
  std::vector<Level> levels_;
  std::set<std::string> root_keys_;
  fields::Streamed streamed_;
  bool frames_done_ = false;
  bool stacks_done_ = false;
  bool frames_deferred_ = false;  // stacks read before the frames were complete
  bool stacks_deferred_ = false;  // blocks read before the stacks were complete
  std::vector<Block> blocks_;     // the current snapshot's, read so far
  bool blocks_streamed_ = false;
  std::vector<Step> steps_;  // the current series'
  bool steps_streamed_ = false;
  bool schema_checked_ = false;
  std::string held_;   // a field error before the schema was known
  std::string error_;  // the error that stopped the reading
  bool any_value_ = false;
  bool syntax_error_ = false;
  std::size_t syntax_position_ = 0;
  std::string syntax_what_;
};

std::optional<Document> read(json::BoundedSource& source, std::uint64_t size,
                             const std::string& path, std::string* error) {
  Reader reader(path, source);
  try {
    Json::sax_parse(source.begin(), source.end(), &reader);
  } catch (const std::bad_alloc&) {
    if (error != nullptr) *error = path + ": too large to hold in memory";
    return std::nullopt;
  }
  try {
    return reader.finish(size, error);
  } catch (const std::bad_alloc&) {
    if (error != nullptr) *error = path + ": too large to hold in memory";
    return std::nullopt;
  }
}

}  // namespace

std::optional<Document> stream_document(std::istream& input, std::uint64_t size,
                                        const std::string& path, std::string* error) {
  json::BoundedSource source(input, fields::kCaps.token_bytes);
  return read(source, size, path, error);
}

std::optional<Document> stream_document(std::string_view text, const std::string& path,
                                        std::string* error) {
  json::BoundedSource source(text, fields::kCaps.token_bytes);
  return read(source, text.size(), path, error);
}

}  // namespace gpumem::detail::attribution
