// The spool file format: line-oriented "key value" text, versioned by its first line and closed
// by an "end" line, so that a reader can tell a whole record from anything else.
#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>

#include "gpumem/internal/spool.hpp"
#include "gpumem/publish.hpp"
#include "publish/spool_files.hpp"

namespace gpumem::detail {
namespace {

constexpr std::string_view kMagic = "gpumem-trace 1";
constexpr std::string_view kEnd = "end";

constexpr Source kSources[] = {Source::automatic, Source::exact, Source::reported, Source::sampled,
                               Source::none};

bool parse_source(std::string_view text, Source& out) {
  for (Source source : kSources) {
    if (to_string(source) == text) {
      out = source;
      return true;
    }
  }
  return false;
}

template <class Int>
bool parse_int(std::string_view text, Int& out) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc{} && end == text.data() + text.size();
}

}  // namespace

std::string format_spool_record(const PublishedTrace& trace) {
  const TraceBytes& b = trace.bytes;
  std::string text{kMagic};
  auto line = [&text](std::string_view key, const auto& value) {
    text += '\n';
    text += key;
    text += ' ';
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) {
      text += std::to_string(value);
    } else {
      text += value;
    }
  };
  line("scope", trace.scope);
  line("pid", trace.pid);
  line("uuid", trace.uuid);
  line("unix_ms", trace.unix_ms);
  line("source", std::string{to_string(b.source)});
  line("device", b.device);
  line("start", b.start);
  line("end", b.end);
  line("peak", b.peak);
  line("delta_used", b.delta_used);
  line("delta_peaked", b.delta_peaked);
  if (trace.pid_start != 0) line("pid_start", trace.pid_start);
  if (!trace.pid_namespace.empty()) line("pid_ns", trace.pid_namespace);
  text += '\n';
  text += kEnd;
  text += '\n';
  return text;
}

bool parse_spool_record(std::string_view text, PublishedTrace& out) {
  PublishedTrace trace;
  unsigned seen = 0;  // one bit per required key
  bool first = true;
  bool ended = false;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    if (newline == std::string_view::npos) return false;  // a torn last line
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (ended) return false;  // nothing may follow the end line
    if (first) {
      if (line != kMagic) return false;
      first = false;
      continue;
    }
    if (line == kEnd) {
      ended = true;
      continue;
    }
    if (!is_plain_text(line)) return false;
    std::size_t space = line.find(' ');
    if (space == std::string_view::npos) return false;
    std::string_view key = line.substr(0, space);
    std::string_view value = line.substr(space + 1);
    TraceBytes& b = trace.bytes;
    bool ok = false;
    unsigned bit = 0;
    if (key == "scope") {
      ok = valid_scope(value);
      trace.scope = value;
      bit = 1u << 0;
    } else if (key == "pid") {
      ok = parse_int(value, trace.pid) && trace.pid > 0;
      bit = 1u << 1;
    } else if (key == "uuid") {
      ok = value.size() <= 96;
      trace.uuid = value;
      bit = 1u << 2;
    } else if (key == "unix_ms") {
      ok = parse_int(value, trace.unix_ms);
      bit = 1u << 3;
    } else if (key == "source") {
      ok = parse_source(value, b.source);
      bit = 1u << 4;
    } else if (key == "device") {
      ok = parse_int(value, b.device);
      bit = 1u << 5;
    } else if (key == "start") {
      ok = parse_int(value, b.start);
      bit = 1u << 6;
    } else if (key == "end") {
      ok = parse_int(value, b.end);
      bit = 1u << 7;
    } else if (key == "peak") {
      ok = parse_int(value, b.peak);
      bit = 1u << 8;
    } else if (key == "delta_used") {
      ok = parse_int(value, b.delta_used);
      bit = 1u << 9;
    } else if (key == "delta_peaked") {
      ok = parse_int(value, b.delta_peaked);
      bit = 1u << 10;
    } else if (key == "pid_start") {  // optional, as the next one
      ok = parse_int(value, trace.pid_start);
      bit = 1u << 11;
    } else if (key == "pid_ns") {
      ok = value.size() <= 64;
      trace.pid_namespace = value;
      bit = 1u << 12;
    } else {
      ok = true;  // a newer writer's extra key: ignored, so the format can grow
    }
    if (!ok || (seen & bit) != 0) return false;
    seen |= bit;
  }
  if (!ended || (seen & ((1u << 11) - 1)) != (1u << 11) - 1) return false;
  out = std::move(trace);
  return true;
}

}  // namespace gpumem::detail
