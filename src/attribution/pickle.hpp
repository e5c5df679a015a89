// Python's pickle, restricted to data: the values a PyTorch memory snapshot holds (dicts, lists,
// tuples, strings, bytes, integers, floats, booleans and None), read from and written as the
// opcodes of protocols 2 to 5. Nothing that imports or calls (GLOBAL, STACK_GLOBAL, REDUCE,
// BUILD, INST, OBJ, NEWOBJ, EXT*, PERSID) is ever read: such a file is refused at that opcode.
//
// The values live in one arena (`Pickle`), referred to by index, so that the memo's shared and
// even cyclic references cost nothing and free nothing twice; every read is bounded by the caps
// below.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem::detail::attribution::pickle {

enum class Kind : std::uint8_t { none, boolean, integer, real, text, bytes, list, tuple, dict };

// 16 bytes: a snapshot of a million blocks holds tens of millions of them.
struct Value {
  Kind kind = Kind::none;
  std::uint32_t ref = 0;     // text and bytes: into Pickle::texts; list, tuple, dict: Pickle::items
  std::int64_t integer = 0;  // boolean (0 or 1), integer; a real's bits
  double real() const { return std::bit_cast<double>(integer); }
};

// What a read may hold, whatever the file says.
struct Limits {
  std::uint64_t max_values = 64u << 20;  // values made (each a few bytes of the file at least)
  std::uint64_t max_text_bytes = 1u << 30;
  std::size_t max_depth = 256;  // nested MARKs (each container's items follow one)
};

struct Pickle {
  Value root;
  std::vector<std::string> texts;
  // A list's or tuple's items; a dict's keys and values, alternately, in insertion order.
  std::vector<std::vector<Value>> items;

  const std::string& text(const Value& value) const { return texts[value.ref]; }
  const std::vector<Value>& children(const Value& value) const { return items[value.ref]; }
  // A dict's value under a string key (the last one set), or nullptr.
  const Value* find(const Value& dict, std::string_view key) const;
};

// Reads one pickle (up to its STOP; what follows is refused). nullopt with `error`, one line
// naming the byte offset and what is wrong ("byte 18: GLOBAL (0x63) would import a class: …").
std::optional<Pickle> read(std::string_view bytes, std::string* error, const Limits& limits = {});

// Writes values as protocol 2 (what PyTorch's own pickler writes, and every Python 3 reads).
class Writer {
 public:
  Writer();
  void none();
  void boolean(bool value);
  void integer(std::int64_t value);
  void real(double value);
  void text(std::string_view value);
  // A container: start it, write its items (a dict: key, value, key, value…), end it.
  void start_list();
  void end_list();
  void start_dict();
  void end_dict();
  void start_tuple();
  void end_tuple();
  // The pickle, STOP written.
  std::string finish();

 private:
  std::string out_;
};

}  // namespace gpumem::detail::attribution::pickle
