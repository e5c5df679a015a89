// The restricted pickle reader: a stack machine over the data opcodes of protocols 2 to 5
// (Python's Lib/pickletools.py documents each), refusing every opcode that imports or calls.
#include <bit>
#include <cstdio>
#include <cstring>

#include "attribution/pickle.hpp"

namespace gpumem::detail::attribution::pickle {
namespace {

std::string hex_byte(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", byte);
  return text;
}

// The opcodes that import or call, by name, for the refusal.
const char* code_opcode(unsigned char op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    default:
      return nullptr;
  }
}

class Reader {
 public:
  Reader(std::string_view bytes, const Limits& limits) : in_(bytes), limits_(limits) {}

  std::optional<Pickle> run(std::string* error) {
    if (!step_all()) {
      if (error != nullptr) *error = "byte " + std::to_string(op_at_) + ": " + why_;
      return std::nullopt;
    }
    return std::move(out_);
  }

 private:
  std::string_view in_;
  Limits limits_;
  std::size_t at_ = 0, op_at_ = 0;
  std::string why_;
  Pickle out_;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value> memo_;
  std::vector<bool> memo_set_;
  std::uint64_t made_ = 0, text_bytes_ = 0;

  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }
  bool take(std::size_t n, const char** data) {
    if (in_.size() - at_ < n) return fail("cut short (" + std::to_string(n) + " bytes expected)");
    *data = in_.data() + at_;
    at_ += n;
    return true;
  }
  template <typename T>
  bool little(std::size_t n, T* value) {
    const char* data = nullptr;
    if (!take(n, &data)) return false;
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < n; ++i)
      word |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[i])) << (8 * i);
    *value = static_cast<T>(word);
    return true;
  }
  bool made() {
    if (++made_ > limits_.max_values)
      return fail("more than " + std::to_string(limits_.max_values) + " values");
    return true;
  }
  bool push(Value value) {
    if (!made()) return false;
    stack_.push_back(value);
    return true;
  }
  bool push_container(Kind kind, std::vector<Value> items) {
    Value value{kind, static_cast<std::uint32_t>(out_.items.size()), 0};
    out_.items.push_back(std::move(items));
    return push(value);
  }
  bool push_text(Kind kind, std::uint64_t length) {
    if (length > in_.size() - at_)
      return fail("a string of " + std::to_string(length) + " bytes, beyond the file's end");
    if ((text_bytes_ += length) > limits_.max_text_bytes)
      return fail("more than " + std::to_string(limits_.max_text_bytes) + " bytes of strings");
    const char* data = nullptr;
    take(static_cast<std::size_t>(length), &data);
    Value value{kind, static_cast<std::uint32_t>(out_.texts.size()), 0};
    out_.texts.emplace_back(data, static_cast<std::size_t>(length));
    return push(value);
  }
  bool pop(Value* value) {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) return fail("a value is missing from the stack");
    *value = stack_.back();
    stack_.pop_back();
    return true;
  }
  // The values above the last MARK, which is removed.
  bool pop_mark(std::vector<Value>* values) {
    if (marks_.empty()) return fail("no MARK before it");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    values->assign(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return true;
  }
  bool top_container(Kind kind, std::vector<Value>** items) {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) return fail("a value is missing from the stack");
    const Value& target = stack_.back();
    if (target.kind != kind)
      return fail(kind == Kind::list ? "appends to something not a list"
                                     : "sets an item of something not a dict");
    *items = &out_.items[target.ref];
    return true;
  }
  bool append(std::vector<Value> values) {
    std::vector<Value>* items = nullptr;
    if (!top_container(Kind::list, &items)) return false;
    items->insert(items->end(), values.begin(), values.end());
    return true;
  }
  bool set_items(std::vector<Value> values) {
    if (values.size() % 2 != 0) return fail("a key without its value");
    for (std::size_t i = 0; i < values.size(); i += 2) {
      const Kind key = values[i].kind;
      if (key == Kind::list || key == Kind::dict) return fail("a dict key that cannot be hashed");
    }
    std::vector<Value>* items = nullptr;
    if (!top_container(Kind::dict, &items)) return false;
    items->insert(items->end(), values.begin(), values.end());
    return true;
  }
  bool memo_put(std::uint64_t index) {
    if (stack_.empty()) return fail("nothing to memoize");
    // Python numbers its memo from 0 as values are made: an index beyond them is no pickle's.
    if (index > made_) return fail("memo index " + std::to_string(index) + " out of sequence");
    if (index >= memo_.size()) {
      memo_.resize(static_cast<std::size_t>(index) + 1);
      memo_set_.resize(memo_.size());
    }
    memo_[static_cast<std::size_t>(index)] = stack_.back();
    memo_set_[static_cast<std::size_t>(index)] = true;
    return made();
  }
  bool memo_get(std::uint64_t index) {
    if (index >= memo_.size() || !memo_set_[static_cast<std::size_t>(index)])
      return fail("memo " + std::to_string(index) + " was never set");
    return push(memo_[static_cast<std::size_t>(index)]);
  }
  bool long_integer(std::uint64_t length) {
    if (length > 8) return fail("an integer of " + std::to_string(length) + " bytes (at most 8)");
    const char* data = nullptr;
    if (!take(static_cast<std::size_t>(length), &data)) return false;
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < length; ++i)
      word |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[i])) << (8 * i);
    if (length > 0 && length < 8 && (data[length - 1] & 0x80) != 0)
      word |= ~std::uint64_t{0} << (8 * length);  // sign extension
    return push({Kind::integer, 0, static_cast<std::int64_t>(word)});
  }

  bool step_all() {
    while (true) {
      op_at_ = at_;
      const char* data = nullptr;
      if (!take(1, &data)) return fail("cut short: no STOP");
      const auto op = static_cast<unsigned char>(*data);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty()) return fail("STOP with a stack not one value");
        if (at_ != in_.size()) {
          op_at_ = at_;
          return fail("bytes after the pickle's STOP");
        }
        out_.root = stack_.back();
        return true;
      }
      if (!step(op)) return false;
    }
  }

  bool step(unsigned char op) {
    std::uint64_t n = 0;
    Value value;
    std::vector<Value> values;
    switch (op) {
      case 0x80:  // PROTO
        if (!little(1, &n)) return false;
        if (n < 2 || n > 5) return fail("pickle protocol " + std::to_string(n) + " (2 to 5 read)");
        return true;
      case 0x95:  // FRAME: a length hint only
        return little(8, &n);
      case '(':
        if (marks_.size() >= limits_.max_depth)
          return fail("nested deeper than " + std::to_string(limits_.max_depth));
        marks_.push_back(stack_.size());
        return true;
      case '0':
        return pop(&value);
      case '1':
        return pop_mark(&values);
      case '2':
        if (!pop(&value)) return false;
        stack_.push_back(value);
        return push(value);
      case 'N':
        return push({Kind::none, 0, 0});
      case 0x88:
        return push({Kind::boolean, 0, 1});
      case 0x89:
        return push({Kind::boolean, 0, 0});
      case 'J': {
        std::uint32_t word = 0;
        if (!little(4, &word)) return false;
        return push({Kind::integer, 0, static_cast<std::int32_t>(word)});
      }
      case 'K':
        if (!little(1, &n)) return false;
        return push({Kind::integer, 0, static_cast<std::int64_t>(n)});
      case 'M':
        if (!little(2, &n)) return false;
        return push({Kind::integer, 0, static_cast<std::int64_t>(n)});
      case 0x8a:  // LONG1
        if (!little(1, &n)) return false;
        return long_integer(n);
      case 0x8b:  // LONG4
        if (!little(4, &n)) return false;
        return long_integer(n);
      case 'G': {
        const char* data = nullptr;
        if (!take(8, &data)) return false;
        std::uint64_t word = 0;
        for (int i = 0; i < 8; ++i) word = (word << 8) | static_cast<unsigned char>(data[i]);
        return push({Kind::real, 0, static_cast<std::int64_t>(word)});
      }
      case 0x8c:  // SHORT_BINUNICODE
        if (!little(1, &n)) return false;
        return push_text(Kind::text, n);
      case 'X':  // BINUNICODE
        if (!little(4, &n)) return false;
        return push_text(Kind::text, n);
      case 0x8d:  // BINUNICODE8
        if (!little(8, &n)) return false;
        return push_text(Kind::text, n);
      case 'C':  // SHORT_BINBYTES
      case 'U':  // SHORT_BINSTRING
        if (!little(1, &n)) return false;
        return push_text(Kind::bytes, n);
      case 'B':  // BINBYTES
      case 'T':  // BINSTRING
        if (!little(4, &n)) return false;
        return push_text(Kind::bytes, n);
      case 0x8e:  // BINBYTES8
        if (!little(8, &n)) return false;
        return push_text(Kind::bytes, n);
      case ']':
        return push_container(Kind::list, {});
      case '}':
        return push_container(Kind::dict, {});
      case ')':
        return push_container(Kind::tuple, {});
      case 'l':
        if (!pop_mark(&values)) return false;
        return push_container(Kind::list, std::move(values));
      case 't':
        if (!pop_mark(&values)) return false;
        return push_container(Kind::tuple, std::move(values));
      case 'd':
        if (!pop_mark(&values)) return false;
        if (!push_container(Kind::dict, {})) return false;
        return set_items(std::move(values));
      case 0x85:
      case 0x86:
      case 0x87: {
        values.resize(op - 0x84);
        for (std::size_t i = values.size(); i-- > 0;)
          if (!pop(&values[i])) return false;
        return push_container(Kind::tuple, std::move(values));
      }
      case 'a':
        if (!pop(&value)) return false;
        return append({value});
      case 'e':
        if (!pop_mark(&values)) return false;
        return append(std::move(values));
      case 's': {
        Value key;
        if (!pop(&value) || !pop(&key)) return false;
        return set_items({key, value});
      }
      case 'u':
        if (!pop_mark(&values)) return false;
        return set_items(std::move(values));
      case 'q':
        if (!little(1, &n)) return false;
        return memo_put(n);
      case 'r':
        if (!little(4, &n)) return false;
        return memo_put(n);
      case 0x94:
        return memo_put(memo_.size());  // MEMOIZE
      case 'h':
        if (!little(1, &n)) return false;
        return memo_get(n);
      case 'j':
        if (!little(4, &n)) return false;
        return memo_get(n);
      default:
        break;
    }
    if (const char* name = code_opcode(op); name != nullptr)
      return fail(std::string(name) + " (" + hex_byte(op) +
                  ") would import or call Python code: refused (a memory snapshot holds only "
                  "dicts, lists, strings and numbers)");
    return fail("opcode " + hex_byte(op) + " is none of the data opcodes read (protocols 2 to 5)");
  }
};

}  // namespace

const Value* Pickle::find(const Value& dict, std::string_view key) const {
  if (dict.kind != Kind::dict) return nullptr;
  const std::vector<Value>& entries = items[dict.ref];
  for (std::size_t i = entries.size(); i >= 2; i -= 2) {
    const Value& name = entries[i - 2];
    if (name.kind == Kind::text && texts[name.ref] == key) return &entries[i - 1];
  }
  return nullptr;
}

std::optional<Pickle> read(std::string_view bytes, std::string* error, const Limits& limits) {
  return Reader(bytes, limits).run(error);
}

}  // namespace gpumem::detail::attribution::pickle
