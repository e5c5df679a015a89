// The checked-JSON reader's fields (gpumem/internal/checked_json.hpp): each read with its type and
// range checked, each error naming the field by its path in the document.
#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::json {

std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

Object::Object(const Json& value, std::string where) : value_(value), where_(std::move(where)) {
  if (!value_.is_object())
    throw BadField(
        (where_.empty() ? std::string("the document") : where_.substr(0, where_.size() - 1)) +
        ": expected an object, found " + shown(value_));
}

void Object::fail(const char* name, const std::string& why) const {
  throw BadField(where_ + name + ": " + why);
}

const Json* Object::find(const char* name) const {
  const auto found = value_.find(name);
  return found == value_.end() ? nullptr : &*found;
}

const Json& Object::get(const char* name) const {
  const Json* value = find(name);
  if (value == nullptr) fail(name, "missing");
  return *value;
}

std::optional<std::int64_t> Object::optional_integer(const char* name, std::int64_t min,
                                                     std::int64_t max, bool required) const {
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

std::int64_t Object::bytes(const char* name) const {
  return *optional_integer(name, 0, std::numeric_limits<std::int64_t>::max(), true);
}

std::int64_t Object::byte_count(const char* name) const {
  const Json* value = find(name);
  if (value != nullptr &&
      !(value->is_number_integer() && value->get<std::int64_t>() >= 0 &&
        !(value->is_number_unsigned() &&
          value->get<std::uint64_t>() >
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))))
    fail(name, "expected a number of bytes, found " + shown(*value));
  return *optional_integer(name, 0, std::numeric_limits<std::int64_t>::max(), true);
}

std::optional<std::int64_t> Object::optional_bytes(const char* name) const {
  return optional_integer(name, 0, std::numeric_limits<std::int64_t>::max());
}

std::optional<std::size_t> Object::index(const char* name, std::size_t count,
                                         const char* what) const {
  const std::optional<std::int64_t> value =
      optional_integer(name, 0, std::numeric_limits<std::int64_t>::max());
  if (!value) return std::nullopt;
  if (static_cast<std::uint64_t>(*value) >= count)
    fail(name,
         std::to_string(*value) + " is out of range (" + std::to_string(count) + " " + what + ")");
  return static_cast<std::size_t>(*value);
}

std::optional<std::string> Object::optional_text(const char* name) const {
  const Json* value = find(name);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (!value->is_string()) fail(name, "expected a string, found " + shown(*value));
  return value->get<std::string>();
}

std::string Object::text(const char* name) const {
  const std::optional<std::string> value = optional_text(name);
  if (!value) fail(name, find(name) == nullptr ? "missing" : "expected a string, found null");
  return *value;
}

double Object::seconds(const char* name) const {
  const Json& value = get(name);
  if (!value.is_number()) fail(name, "expected seconds, found " + shown(value));
  return value.get<double>();
}

std::optional<double> Object::optional_seconds(const char* name) const {
  const Json* value = find(name);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return seconds(name);
}

std::optional<bool> Object::optional_flag(const char* name) const {
  const Json* value = find(name);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (!value->is_boolean()) fail(name, "expected true or false, found " + shown(*value));
  return value->get<bool>();
}

const Json& Object::list(const char* name, bool required) const {
  static const Json empty = Json::array();
  const Json* value = find(name);
  if (value == nullptr || (!required && value->is_null())) {
    if (required) fail(name, "missing");
    return empty;
  }
  if (!value->is_array()) fail(name, "expected a list, found " + shown(*value));
  return *value;
}

std::string Object::one_of(const char* name, std::initializer_list<const char*> allowed) const {
  const std::string value = text(name);
  std::string names;
  for (const char* candidate : allowed) {
    if (value == candidate) return value;
    names += std::string(names.empty() ? "" : ", ") + candidate;
  }
  fail(name, "expected one of " + names + ", found \"" + value + "\"");
}

}  // namespace gpumem::detail::json
