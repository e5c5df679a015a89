// The checked-JSON reader (gpumem/internal/checked_json.hpp): a SAX handler that builds only what
// the format keeps, hands over the elements of the lists it streams as soon as each is complete,
// and stops at the first error with the field's path.
#include <algorithm>
#include <charconv>
#include <new>
#include <unordered_set>

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::json {
namespace {

struct Level {
  Json* value = nullptr;
  std::string pattern;  // "devices[].uuid", when `tracked`
  bool whole = false;   // everything below is kept
  bool tracked = true;  // the pattern is known: not kept whole, or a streamed list is below
  bool streamed = false;
  signed char elements_tracked = -1;  // an array's, where it is kept whole: once known, 0 or 1
  std::string key;                    // an object's key being filled
  std::size_t count = 0;              // an array's elements so far (the last one's index + 1)
};

class Reader final : public nlohmann::json_sax<Json> {
 public:
  Reader(const Shape& shape, const Caps& caps, const BoundedSource& source)
      : shape_(shape), caps_(caps), source_(source) {
    // The streamed lists and every value above one: their patterns are followed in a value kept
    // whole.
    for (const std::string& list : shape_.streamed) {
      above_streamed_.insert(list);
      for (std::size_t at = 1; at < list.size(); ++at) {
        if (list[at] == '.' || list[at] == '[') above_streamed_.insert(list.substr(0, at));
      }
    }
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
    if (skipping_ > 0) return true;
    // One name twice would keep the last value in a tree and both lists in a stream.
    if (shape_.root_fields_once && levels_.size() == 1 && !root_fields_.insert(name).second)
      return fail_field("the document: \"" + name + "\" appears twice");
    levels_.back().key = std::move(name);
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

  std::optional<Json> finish(std::uint64_t size, std::string* error_out) {
    std::string why = error_;
    if (why.empty() && source_.overflowed())
      why = path(false) + ": a string or number over " + size_words(caps_.token_bytes) +
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
  // The path of the value the parser is in, as an error names it ("snapshots[2].blocks[7]"): of
  // the last element of the innermost list when `element`, else of the value being read (a
  // scalar is not counted in its list until it is complete).
  std::string path(bool element) const {
    std::string path;
    path.reserve(64);
    for (std::size_t depth = 0; depth < levels_.size(); ++depth) {
      const Level& level = levels_[depth];
      if (level.value->is_array()) {
        const bool open = element || depth + 1 < levels_.size();
        char digits[24];
        const auto end =
            std::to_chars(digits, digits + sizeof digits, open ? level.count - 1 : level.count);
        path += '[';
        path.append(digits, end.ptr);
        path += ']';
      } else if (!level.key.empty()) {
        if (!path.empty()) path += '.';
        path += level.key;
      }
    }
    return path.empty() ? "the document" : path;
  }

  bool listed(const std::vector<std::string>& list, const std::string& pattern) const {
    return std::find(list.begin(), list.end(), pattern) != list.end();
  }

  bool not_an_object() {
    error_ = "not " + shape_.what + " (not a JSON object)";
    return false;
  }

  // Where a new value goes (nullptr: it is not kept), with, for a container, its pattern where
  // it is followed.
  Json* place(Json&& value, Level& child, bool container) {
    any_value_ = true;
    Level& parent = levels_.back();
    const bool array = parent.value->is_array();
    if (array) ++parent.count;
    if (!parent.tracked || (parent.whole && !container)) {
      child.whole = true;
      child.tracked = false;
    } else if (array && parent.whole && parent.elements_tracked >= 0) {
      child.whole = true;
      child.tracked = parent.elements_tracked == 1;
      if (child.tracked) child.pattern = parent.pattern + "[]";
    } else {
      // Built in a string kept from value to value: no allocation per value.
      scratch_.assign(parent.pattern);
      if (array) {
        scratch_ += "[]";
      } else {
        if (!scratch_.empty()) scratch_ += '.';
        scratch_ += parent.key;
      }
      if (parent.whole) {
        child.whole = true;
      } else {
        const bool kept =
            shape_.kept->keeps(scratch_) || (levels_.size() == 1 && parent.key == "schema");
        if (!kept) return nullptr;
        child.whole = !shape_.kept->lists_below(scratch_);
      }
      child.tracked = !child.whole || above_streamed_.count(scratch_) != 0;
      if (container && child.tracked) child.pattern = scratch_;
      if (array && parent.whole) parent.elements_tracked = child.tracked ? 1 : 0;
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
      root.whole = shape_.kept == nullptr;
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
    if (type == Json::value_t::array && child.tracked && listed(shape_.streamed, child.pattern)) {
      child.streamed = true;
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

  // `value`, the last one placed in the innermost level, is complete.
  bool completed(Json& value) {
    Level& parent = levels_.back();
    if (levels_.size() == 1) {
      if (parent.key == "schema") return check_schema(value);
      if (shape_.field_done) shape_.field_done(parent.key);
      return true;
    }
    if (!parent.streamed) return true;
    // A field error held until the schema says what the document is: the rest is not read.
    if (held_.empty()) {
      const std::string where = path(true);
      try {
        shape_.element(parent.pattern, where, value);
      } catch (const BadField& bad) {
        if (!fail_field(bad.what())) return false;
      } catch (const Json::exception& bad) {
        if (!fail_field(where + ": " + bad.what())) return false;
      }
    }
    parent.value->get_ref<Json::array_t&>().pop_back();
    return true;
  }

  // A field error stops the reading once the schema is known to be this format's; before, it is
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
  std::unordered_set<std::string> above_streamed_;
  std::string scratch_;  // a value's pattern, being checked
  Json root_;
  std::vector<Level> levels_;
  std::unordered_set<std::string> root_fields_;  // with `root_fields_once`
  std::size_t skipping_ = 0;                     // depth inside a value not kept
  bool schema_checked_ = false;
  std::string held_;   // a field error before the schema was known
  std::string error_;  // the error that stopped the reading
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
