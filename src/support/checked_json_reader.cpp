// The checked-JSON reader (gpumem/internal/checked_json.hpp): a SAX handler that builds only what
// the format keeps, hands over the elements of the lists it streams as soon as each is complete,
// and stops at the first error with the field's path.
#include <algorithm>
#include <new>
#include <unordered_set>

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::json {
namespace {

struct Level {
  Json* value = nullptr;
  std::string pattern;  // "devices[].uuid"
  std::string path;     // "devices[3].uuid"
  bool whole = false;   // everything below is kept
  bool streamed = false;
  std::string key;        // an object's key being filled
  std::size_t count = 0;  // an array's elements so far
};

class Reader final : public nlohmann::json_sax<Json> {
 public:
  Reader(const Shape& shape, const Caps& caps, const BoundedSource& source)
      : shape_(shape), caps_(caps), source_(source) {}

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
    if (skipping_ == 0) levels_.back().key = std::move(name);
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    syntax_error_ = true;
    syntax_position_ = source_.position();
    if (dynamic_cast<const Json::parse_error*>(&error) == nullptr) syntax_what_ = error.what();
    return false;
  }

  std::optional<Json> finish(std::uint64_t size, std::string* error_out) {
    std::string why = error_;
    if (why.empty() && source_.overflowed())
      why = where_now() + ": a string or number over " + size_words(caps_.token_bytes) +
            " (at byte " + std::to_string(source_.overflow_position()) + ")";
    if (why.empty() && syntax_error_)
      why = syntax_error(syntax_position_, size, any_value_, syntax_what_);
    if (why.empty() && !schema_checked_) why = shape_.check_schema(Json());
    if (why.empty()) why = held_;
    if (!why.empty()) {
      if (error_out != nullptr) *error_out = why;
      return std::nullopt;
    }
    return std::move(root_);
  }

 private:
  // The path of the container the parser is in, as an error names it.
  std::string where_now() const {
    if (levels_.empty()) return "the document";
    const Level& level = levels_.back();
    if (level.value != nullptr && level.value->is_array())
      return level.path + "[" + std::to_string(level.count) + "]";
    if (!level.key.empty()) return level.path.empty() ? level.key : level.path + "." + level.key;
    return level.path.empty() ? "the document" : level.path;
  }

  bool listed(const std::vector<std::string>& list, const std::string& pattern) const {
    return std::find(list.begin(), list.end(), pattern) != list.end();
  }

  bool not_an_object() {
    error_ = "not " + shape_.what + " (not a JSON object)";
    return false;
  }

  // Where a new value goes (nullptr: it is not kept), with its pattern and, for a container, its
  // path (a scalar's is only ever named by the element that holds it).
  Json* place(Json&& value, Level& child, bool container) {
    any_value_ = true;
    Level& parent = levels_.back();
    const bool array = parent.value->is_array();
    const std::size_t index = parent.count;
    if (array) ++parent.count;
    if (parent.whole) {
      child.whole = true;
    } else {
      // Built in a string kept from value to value: no allocation per value.
      scratch_.assign(parent.pattern);
      if (array) {
        scratch_ += "[]";
      } else {
        if (!scratch_.empty()) scratch_ += '.';
        scratch_ += parent.key;
      }
      const bool kept =
          shape_.kept->keeps(scratch_) || (levels_.size() == 1 && parent.key == "schema");
      if (!kept) return nullptr;
      child.whole = !shape_.kept->lists_below(scratch_);
      if (container) child.pattern = scratch_;
    }
    if (container) {
      child.path = array ? parent.path + "[" + std::to_string(index) + "]"
                         : (parent.path.empty() ? parent.key : parent.path + "." + parent.key);
    }
    if (array) {
      auto& list = parent.value->get_ref<Json::array_t&>();
      list.push_back(std::move(value));
      return &list.back();
    }
    Json& slot = parent.value->get_ref<Json::object_t&>()[parent.key];
    slot = std::move(value);
    return &slot;
  }

  template <class Value>
  bool scalar(Value&& value) {
    if (skipping_ > 0) return true;
    if (levels_.empty()) {
      any_value_ = true;
      return not_an_object();
    }
    Level child;
    Json* placed = place(Json(std::forward<Value>(value)), child, false);
    return placed == nullptr || completed(*placed);
  }

  bool open(Json::value_t type) {
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    if (levels_.empty()) {
      any_value_ = true;
      if (type != Json::value_t::object) return not_an_object();
      root_ = Json::object();
      Level root;
      root.value = &root_;
      levels_.push_back(std::move(root));
      return true;
    }
    Level child;
    Json* placed = place(Json(type), child, true);
    if (placed == nullptr) {
      skipping_ = 1;
      return true;
    }
    child.value = placed;
    if (levels_.size() == 1 && type == Json::value_t::array &&
        listed(shape_.streamed, child.pattern)) {
      child.streamed = true;
      child.whole = false;
      if (shape_.restart) shape_.restart(child.pattern);
    }
    levels_.push_back(std::move(child));
    return true;
  }

  bool close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    Level child = std::move(levels_.back());
    levels_.pop_back();
    if (levels_.empty()) return true;
    return completed(*child.value);
  }

  // `value` (at `child`'s path) is complete.
  bool completed(Json& value) {
    Level& parent = levels_.back();
    if (levels_.size() == 1 && parent.key == "schema" && !parent.value->is_array())
      return check_schema(value);
    if (!parent.streamed) return true;
    if (held_.empty()) {
      try {
        shape_.element(parent.pattern, parent.count - 1, value);
      } catch (const BadField& bad) {
        if (!fail_field(bad.what())) return false;
      } catch (const Json::exception& bad) {
        if (!fail_field(parent.path + "[" + std::to_string(parent.count - 1) + "]: " + bad.what()))
          return false;
      }
    }
    parent.value->get_ref<Json::array_t&>().pop_back();
    return true;
  }

  bool fail_field(const std::string& why) {
    if (schema_checked_) {
      error_ = why;
      return false;
    }
    if (held_.empty()) held_ = why;
    return true;
  }

  bool check_schema(const Json& value) {
    error_ = shape_.check_schema(value);
    if (!error_.empty()) return false;
    schema_checked_ = true;
    if (!held_.empty()) {
      error_ = held_;
      return false;
    }
    return true;
  }

  const Shape& shape_;
  const Caps& caps_;
  const BoundedSource& source_;
  std::string scratch_;  // a value's pattern, being checked
  Json root_;
  std::vector<Level> levels_;
  std::size_t skipping_ = 0;  // depth inside a value not kept
  bool schema_checked_ = false;
  std::string held_;
  std::string error_;
  bool any_value_ = false;
  bool syntax_error_ = false;
  std::uint64_t syntax_position_ = 0;
  std::string syntax_what_;
};

std::optional<Json> read(BoundedSource& source, std::uint64_t size, const std::string& path,
                         const Shape& shape, const Caps& caps, std::string* error) {
  std::string why;
  std::optional<Json> document;
  try {
    Reader reader(shape, caps, source);
    Json::sax_parse(source.begin(), source.end(), &reader);
    document = reader.finish(size, &why);
  } catch (const std::bad_alloc&) {
    why = "too large to hold in memory";
  } catch (const BadField& bad) {
    why = bad.what();
  }
  if (!document && error != nullptr) *error = path + ": " + why;
  return document;
}

}  // namespace

Kept::Kept(std::initializer_list<const char*> patterns) {
  for (const std::string pattern : patterns) {
    kept_.insert(pattern);
    for (std::size_t at = 1; at < pattern.size(); ++at) {
      if (pattern[at] == '.' || pattern[at] == '[') parents_.insert(pattern.substr(0, at));
    }
  }
}

std::optional<Json> read_text(std::string_view text, const std::string& path, const Shape& shape,
                              const Caps& caps, std::string* error) {
  BoundedSource source(text, caps.token_bytes);
  return read(source, text.size(), path, shape, caps, error);
}

std::optional<Json> read_stream(std::istream& input, std::uint64_t size, const std::string& path,
                                const Shape& shape, const Caps& caps, std::string* error) {
  BoundedSource source(input, caps.token_bytes);
  return read(source, size, path, shape, caps, error);
}

std::optional<Json> read_file(const std::string& path, const Shape& shape, const Caps& caps,
                              std::string* error) {
  std::ifstream file;
  const std::optional<std::uint64_t> size =
      open_file(path, shape.what, caps.file_bytes, file, error);
  if (!size) return std::nullopt;
  std::optional<Json> document = read_stream(file, *size, path, shape, caps, error);
  if (document && file.bad()) {
    if (error != nullptr) *error = path + ": cannot be read";
    return std::nullopt;
  }
  return document;
}

}  // namespace gpumem::detail::json
