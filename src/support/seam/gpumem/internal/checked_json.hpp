// The one checked-JSON reader under every gpumem file format (gpumem.run/1, gpumem.report/1,
// gpumem.attribution/1 and `gpumem diff`'s inputs): the file opened as a regular file within the
// format's size cap, the text streamed through nlohmann's SAX parser, and each field read with its
// path in the document in errors ("devices[3].peak_bytes: expected a number of bytes, found -1").
//
// Memory is bounded by what a format keeps, not by the input: runs of whitespace are passed to the
// parser as one character (nlohmann's lexer would hold them until the next token), a string or
// number longer than the format's token cap is refused as soon as the cap is passed, values the
// format does not keep are parsed and dropped, and the elements of the lists it reads one by one
// are handed over as soon as each is complete. Running out of memory is an error like any other
// ("too large to hold in memory"), never an abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail::json {

using Json = nlohmann::json;

// A field that is not what the schema says: its path in the document, and what is wrong.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value as an error quotes it: JSON, cut to 60 characters.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string shown(const Json& value);

// A JSON object being read, with its path in the document for errors ("snapshots[2]."; "" for
// the root). Each reader throws BadField naming the field and what was expected.
class Object {
 public:
  // @throws BadField when `value` is not an object.
  Object(const Json& value, std::string where);

  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const char* name, const std::string& why) const;

  const Json* find(const char* name) const;
  const Json& get(const char* name) const;  // missing: BadField

  // An integer from `min` to `max`; nullopt when absent or null (unless `required`).
  std::optional<std::int64_t> optional_integer(const char* name, std::int64_t min, std::int64_t max,
                                               bool required = false) const;
  std::optional<int> optional_int(const char* name, bool required = false) const {
    const auto value = optional_integer(name, 0, std::numeric_limits<int>::max(), required);
    return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
  }
  std::int64_t bytes(const char* name) const;  // a required count of bytes, >= 0
  // The same, said as "expected a number of bytes" when it is not one (run files and reports).
  std::int64_t byte_count(const char* name) const;
  std::optional<std::int64_t> optional_bytes(const char* name) const;
  // An index into a list of `count` (`what` names the list in errors).
  std::optional<std::size_t> index(const char* name, std::size_t count, const char* what) const;
  std::optional<std::string> optional_text(const char* name) const;
  std::string text(const char* name) const;  // required, not null
  double seconds(const char* name) const;    // any number, required
  std::optional<double> optional_seconds(const char* name) const;
  std::optional<bool> optional_flag(const char* name) const;
  const Json& list(const char* name, bool required = true) const;
  // The text field `name`, which must be one of `allowed`.
  std::string one_of(const char* name, std::initializer_list<const char*> allowed) const;
  std::string item(const char* name, std::size_t at) const {
    return where_ + name + "[" + std::to_string(at) + "]";
  }

 private:
  const Json& value_;
  std::string where_;
};

// A format's limits.
struct Caps {
  std::uint64_t file_bytes = 64ull << 20;  // the whole file
  std::size_t token_bytes = 1u << 20;      // one string, key or number
};

// The values a format keeps, as patterns (below): built once per format, a constant of its reader.
class Kept {
 public:
  Kept(std::initializer_list<const char*> patterns);
  bool keeps(const std::string& pattern) const { return kept_.count(pattern) != 0; }
  // Whether patterns below `pattern` are listed (else a kept value is kept whole).
  bool lists_below(const std::string& pattern) const { return parents_.count(pattern) != 0; }

 private:
  std::unordered_set<std::string> kept_;
  std::unordered_set<std::string> parents_;
};

// What a format keeps of a document and how it reads it. Paths are patterns: the root's fields by
// name ("host"), an object's below it after a dot ("gpumem_rank.rank"), any element of a list as
// "[]" ("devices[]", "devices[].uuid").
struct Shape {
  // What the document is called in errors, with its article ("a gpumem run file").
  std::string what;
  // Called once with the root's "schema" as soon as it is read (null when the document has none,
  // at its end): "" when this format reads it, else the error.
  std::function<std::string(const Json& schema)> check_schema;
  // The patterns kept (a kept value keeps everything below it unless patterns below it are
  // listed, or it is streamed). Everything else is parsed and dropped. Null: everything is kept.
  const Kept* kept = nullptr;
  // Lists (kept) read element by element, at the root ("frames") or in a kept value
  // ("snapshots[].blocks"): each complete element is handed to `element` with its path in the
  // document ("snapshots[2].blocks[7]"; it throws BadField) and dropped. `restart` is called as
  // each such list starts; a list named twice is read again from its start, as a tree keeps the
  // last one.
  std::vector<std::string> streamed;
  std::function<void(const std::string& list, const std::string& where, const Json& element)>
      element;
  std::function<void(const std::string& list)> restart;
  // If set, called with each kept root field's name (but "schema") once its value is complete.
  std::function<void(const std::string& name)> field_done;
  // Whether a root field named twice is an error ("the document: \"frames\" appears twice")
  // rather than read again.
  bool root_fields_once = false;
};

// The text of a document fed to the parser: runs of whitespace outside strings passed as one
// character, a token longer than `token_bytes` cut off (the parser then sees the end, and
// `overflowed()` says why). Positions are those of the raw input.
class BoundedSource {
 public:
  BoundedSource(std::istream& input, std::size_t token_bytes);
  BoundedSource(std::string_view text, std::size_t token_bytes);

  // The next character for the parser, or EOF.
  inline int next();
  // The raw position (1-based) of the last character the parser took, or the size + 1 once it
  // took the end: where a syntax error is.
  std::uint64_t position() const { return eof_taken_ ? position_ + 1 : taken_; }
  bool overflowed() const { return overflowed_; }
  // The raw position of the byte that passed the token cap.
  std::uint64_t overflow_position() const { return position_; }
  bool ended() const { return ended_; }

  // An input iterator over next() for nlohmann::json::sax_parse(first, last, ...).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = char;
    Iterator() = default;
    explicit Iterator(BoundedSource* source) : source_(source) {}
    char operator*() const {
      source_->taken_ = source_->current_position_;
      return static_cast<char>(source_->current_);
    }
    Iterator& operator++() {
      source_->current_ = source_->next();
      source_->current_position_ = source_->position_;
      return *this;
    }
    // The parser asks whether the input ended before each character it takes.
    bool operator==(const Iterator& other) const {
      const bool ended = at_end(), other_ended = other.at_end();
      if (ended && other_ended && source_ != nullptr) source_->eof_taken_ = true;
      if (ended && other_ended && other.source_ != nullptr) other.source_->eof_taken_ = true;
      return ended == other_ended;
    }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    bool at_end() const { return source_ == nullptr || source_->current_ < 0; }
    BoundedSource* source_ = nullptr;
  };
  Iterator begin();
  Iterator end() { return {}; }

 private:
  inline int raw();
  void refill();

  std::istream* input_ = nullptr;
  std::string_view text_;
  std::vector<char> buffer_;
  std::size_t at_ = 0;      // in text_ or buffer_
  std::size_t filled_ = 0;  // of buffer_
  std::size_t token_bytes_;
  std::uint64_t position_ = 0;
  int current_ = -1;
  std::uint64_t current_position_ = 0, taken_ = 0;
  bool eof_taken_ = false;
  bool in_string_ = false, escaped_ = false, after_space_ = false;
  std::size_t token_ = 0;
  bool overflowed_ = false, ended_ = false;
};

inline int BoundedSource::raw() {
  if (input_ == nullptr) {
    if (at_ >= text_.size()) return -1;
    ++position_;
    return static_cast<unsigned char>(text_[at_++]);
  }
  if (at_ >= filled_) {
    refill();
    if (filled_ == 0) return -1;
  }
  ++position_;
  return static_cast<unsigned char>(buffer_[at_++]);
}

inline int BoundedSource::next() {
  if (ended_) return -1;
  for (;;) {
    const int c = raw();
    if (c < 0) {
      ended_ = true;
      return -1;
    }
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      if (++token_ > token_bytes_) break;
      return c;
    }
    if ((c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (after_space_) continue;  // the run is one character to the parser
      after_space_ = true;
      token_ = 0;
      return c;
    }
    after_space_ = false;
    if (c == '"') {
      in_string_ = true;
      token_ = 0;
    } else if ((c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':')) {
      token_ = 0;
    } else if (++token_ > token_bytes_) {  // a number or a literal
      break;
    }
    return c;
  }
  overflowed_ = true;
  ended_ = true;
  return -1;
}

// Opens `path` for reading as `what` ("a gpumem run file"): a regular file of at most `max_bytes`.
// On failure, nullopt with `error` "path: why" (missing, a folder, not a regular file, too large).
std::optional<std::uint64_t> open_file(const std::string& path, const std::string& what,
                                       std::uint64_t max_bytes, std::ifstream& file,
                                       std::string* error);

// Reads the document in `path` / `text` as `shape` says: the root object holding what was kept
// (the streamed lists empty), or nullopt with `error` "path: why" (the file, the JSON, the
// schema, the first field in error by its path, a token over its cap, out of memory).
// No tool calls them (each format's reader is the library's): hidden in libgpumem.so.
__attribute__((visibility("hidden"))) std::optional<Json> read_file(const std::string& path,
                                                                    const Shape& shape,
                                                                    const Caps& caps,
                                                                    std::string* error);
__attribute__((visibility("hidden"))) std::optional<Json> read_text(std::string_view text,
                                                                    const std::string& path,
                                                                    const Shape& shape,
                                                                    const Caps& caps,
                                                                    std::string* error);
// The same from a stream of `size` bytes.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<Json> read_stream(
    std::istream& input, std::uint64_t size, const std::string& path, const Shape& shape,
    const Caps& caps, std::string* error);

// A cap in words: "64 MiB", "1000 bytes".
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string size_words(std::uint64_t bytes);

// The syntax error a reader reports for a parse that stopped at raw byte `position` of `size`
// (`what_` nlohmann's words for an error that is not a syntax one, such as a number no type holds).
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string syntax_error(std::uint64_t position,
                                                               std::uint64_t size, bool any_value,
                                                               const std::string& what);

}  // namespace gpumem::detail::json

#pragma GCC visibility pop
