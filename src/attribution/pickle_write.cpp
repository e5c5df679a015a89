// The pickle writer: protocol 2, each container as EMPTY_* MARK items APPENDS/SETITEMS (or MARK
// items TUPLE), no memo.
#include <bit>

#include "attribution/pickle.hpp"

namespace gpumem::detail::attribution::pickle {
namespace {

void little(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

Writer::Writer() {
  out_ += '\x80';
  out_ += '\x02';
}

void Writer::none() {
  out_ += 'N';
}

void Writer::boolean(bool value) {
  out_ += value ? '\x88' : '\x89';
}

void Writer::integer(std::int64_t value) {
  if (value >= 0 && value < 256) {
    out_ += 'K';
    little(out_, static_cast<std::uint64_t>(value), 1);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out_ += 'J';
    little(out_, static_cast<std::uint32_t>(static_cast<std::int32_t>(value)), 4);
  } else {
    // LONG1: the fewest little-endian two's-complement bytes that keep the sign.
    int bytes = 8;
    while (bytes > 1) {
      const std::int64_t shifted = value >> (8 * (bytes - 1) - 1);
      if (shifted != 0 && shifted != -1) break;
      --bytes;
    }
    out_ += '\x8a';
    out_ += static_cast<char>(bytes);
    little(out_, static_cast<std::uint64_t>(value), bytes);
  }
}

void Writer::real(double value) {
  out_ += 'G';
  const auto word = std::bit_cast<std::uint64_t>(value);
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((word >> (8 * i)) & 0xff);
}

void Writer::text(std::string_view value) {
  out_ += 'X';
  little(out_, value.size(), 4);
  out_ += value;
}

void Writer::start_list() {
  out_ += "](";
}
void Writer::end_list() {
  out_ += 'e';
}
void Writer::start_dict() {
  out_ += "}(";
}
void Writer::end_dict() {
  out_ += 'u';
}
void Writer::start_tuple() {
  out_ += '(';
}
void Writer::end_tuple() {
  out_ += 't';
}

std::string Writer::finish() {
  out_ += '.';
  return std::move(out_);
}

}  // namespace gpumem::detail::attribution::pickle
