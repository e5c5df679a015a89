#include "path_template.hpp"

#include "gpumem/internal/run_rank.hpp"

namespace gpumem::cli {
namespace {

using run::local_rank_variables;
using run::rank_variables;

// A host name as one path component: a '/' or a NUL byte would change the folder.
std::string component(std::string text) {
  for (char& c : text) {
    if (c == '/' || c == '\0') c = '_';
  }
  return text;
}

}  // namespace

std::optional<std::string> expand_path(const std::string& pattern, const PathValues& values,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::string> {
    if (error != nullptr) *error = "'" + pattern + "': " + why;
    return std::nullopt;
  };
  std::string out;
  for (std::size_t at = 0; at < pattern.size(); ++at) {
    const char c = pattern[at];
    if ((c == '{' || c == '}') && at + 1 < pattern.size() && pattern[at + 1] == c) {
      out += c;
      ++at;
      continue;
    }
    if (c == '}') return fail("a '}' without its '{' (write '}}' for a brace)");
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = pattern.find('}', at);
    if (close == std::string::npos) return fail("a '{' without its '}' (write '{{' for a brace)");
    const std::string name = pattern.substr(at + 1, close - at - 1);
    if (name == "host") {
      out += component(values.host);
    } else if (name == "pid") {
      out += std::to_string(values.pid);
    } else if (name == "rank" || name == "local_rank") {
      const std::optional<int>& number = name == "rank" ? values.rank : values.local_rank;
      if (!number) {
        return fail("{" + name + "}: gpumem's environment names no " +
                    (name == "rank" ? "rank (" + rank_variables() + ")"
                                    : "local rank (" + local_rank_variables() + ")") +
                    "; run gpumem under the launcher (srun gpumem run ...) or leave it out");
      }
      out += std::to_string(*number);
    } else {
      return fail("unknown placeholder {" + name +
                  "} (known: {host}, {rank}, {local_rank}, {pid})");
    }
    at = close;
  }
  return out;
}

}  // namespace gpumem::cli
