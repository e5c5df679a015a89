#include <cstdio>
#include <ostream>

#include "gpumem/trace.hpp"

namespace gpumem {
namespace {

// Python's format(n, "6,.0f") for an integer: thousands separated by ',', right-aligned in 6.
std::string thousands_field(std::int64_t value) {
  const bool negative = value < 0;
  // Through unsigned, so that INT64_MIN negates without overflow.
  std::uint64_t magnitude =
      negative ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
  std::string digits;
  int in_group = 0;
  do {
    if (in_group == 3) {
      digits.insert(digits.begin(), ',');
      in_group = 0;
    }
    digits.insert(digits.begin(), static_cast<char>('0' + magnitude % 10));
    magnitude /= 10;
    ++in_group;
  } while (magnitude != 0);
  if (negative) digits.insert(digits.begin(), '-');
  constexpr std::size_t width = 6;
  if (digits.size() < width) digits.insert(0, width - digits.size(), ' ');
  return digits;
}

}  // namespace

std::string format_report(std::int64_t delta_used_mb, std::int64_t delta_peaked_mb,
                          const std::optional<std::string>& ctx,
                          const std::optional<std::string>& subctx) {
  std::string line = "\u25b3Used Peaked MB: " + thousands_field(delta_used_mb) + " " +
                     thousands_field(delta_peaked_mb);
  if (ctx || subctx) {
    line += " (";
    if (ctx) line += *ctx;
    if (ctx && subctx) line += ": ";
    if (subctx) line += *subctx;
    line += ")";
  }
  return line;
}

std::pair<std::int64_t, std::int64_t> trace_deltas(std::int64_t start, std::int64_t end,
                                                   std::int64_t peak) noexcept {
  const std::int64_t used = end - start;
  std::int64_t peaked = peak - start;
  if (peaked < 0) {
    peaked = 0;
  } else if (used > 0) {
    // fastai.utils.mem could go negative here when its sampler missed the end level.
    peaked = peaked > used ? peaked - used : 0;
  }
  return {used, peaked};
}

ReportSink stdout_sink() {
  return [](std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  };
}

ReportSink ostream_sink(std::ostream& out) {
  return [&out](std::string_view line) { out << line << '\n' << std::flush; };
}

}  // namespace gpumem
