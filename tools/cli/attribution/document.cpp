#include "attribution/document.hpp"

#include "format.hpp"
#include "text_width.hpp"

namespace gpumem::cli::attribution {

std::optional<std::size_t> choose_snapshot(const Document& document, const std::string& which,
                                           std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::size_t> {
    if (error != nullptr) *error = document.path + ": " + why;
    return std::nullopt;
  };
  const auto& snapshots = document.snapshots;
  if (which == "peak" || which == "oom") {
    std::optional<std::size_t> chosen;
    for (std::size_t at = 0; at < snapshots.size(); ++at) {
      if (snapshots[at].what != which) continue;
      if (which == "oom") return at;
      if (!chosen || snapshots[at].level_bytes > snapshots[*chosen].level_bytes) chosen = at;
    }
    if (!chosen)
      return fail("no " + std::string(which == "oom" ? "out-of-memory" : "peak") + " snapshot (" +
                  std::to_string(snapshots.size()) + " snapshots)");
    return chosen;
  }
  if (which.empty() || which.find_first_not_of("0123456789") != std::string::npos ||
      which.size() > 18)
    return fail("--snapshot " + which + ": expected peak, oom or a snapshot's index");
  const std::size_t index = std::stoull(which);
  if (index >= snapshots.size())
    return fail("--snapshot " + which + " is out of range (" + std::to_string(snapshots.size()) +
                " snapshots" +
                (snapshots.empty() ? "" : ": 0 to " + std::to_string(snapshots.size() - 1)) + ")");
  return index;
}

std::string describe(const Document& document, const Snapshot& snapshot) {
  std::string text = snapshot.what == "oom" ? "out-of-memory failure" : "peak";
  if (snapshot.scope) text += " of scope " + *snapshot.scope;
  text += " on GPU " + std::to_string(snapshot.device);
  if (const Device* device = document.device(snapshot.device);
      device != nullptr && !device->name.empty())
    text += " (" + device->name + ")";
  if (snapshot.pid) text += ", pid " + std::to_string(*snapshot.pid);
  text += ", at " + format_seconds(snapshot.time_s);
  return text;
}

std::string frame_function(const Frame& frame) {
  if (frame.function) return *frame.function;
  if (frame.address) return *frame.address;
  return "??";
}

std::string frame_label(const Frame& frame) {
  if (frame.function) {
    if (!frame.file) return *frame.function;
    return *frame.function + " (" + *frame.file +
           (frame.line ? ":" + std::to_string(*frame.line) : std::string()) + ")";
  }
  std::string where = frame.module.value_or("");
  if (frame.address) where += (where.empty() ? "" : "+") + *frame.address;
  return where.empty() ? "??" : "?? (" + where + ")";
}

namespace {

// Callers named after the innermost frame, outward.
constexpr std::size_t kCallersShown = 3;

}  // namespace

// The C runtime's frames under main (_start, __libc_start_main…): under every stack, telling
// nothing, so left out of the callers. Without the C library's debug symbols (Debian's
// libc6-dbg) its local functions (__libc_start_call_main) have no name: below main, a frame of
// the C library that was not symbolized is the runtime's too.
bool runtime_entry(const Frame& frame, bool below_main) {
  if (frame.function)
    return *frame.function == "_start" || frame.function->starts_with("__libc_start");
  if (!below_main || !frame.module) return false;
  const std::size_t slash = frame.module->rfind('/');
  const std::string file = frame.module->substr(slash == std::string::npos ? 0 : slash + 1);
  return file.starts_with("libc.so") || file.starts_with("libc-");
}

std::string callers(const Document& document, const std::vector<std::size_t>& stack,
                    const std::string& arrow) {
  std::vector<std::string> names;
  bool below_main = false;
  for (std::size_t depth = 1; depth < stack.size(); ++depth) {
    const Frame& frame = document.frames[stack[depth]];
    if (!runtime_entry(frame, below_main)) names.push_back(frame_function(frame));
    below_main = below_main || frame.function == "main";
  }
  std::string text;
  for (std::size_t at = 0; at < names.size() && at < kCallersShown; ++at)
    text += (at == 0 ? "" : arrow) + names[at];
  if (names.size() > kCallersShown)
    text += arrow + "(" + std::to_string(names.size() - kCallersShown) + " more)";
  return printable(text);
}

// A demangled function as a narrow table shows it: its parameter list elided
// ("load_weights(…)") and the compiler's clone suffixes (" [clone .isra.0]") left out.
std::string short_function(std::string name, const std::string& ellipsis) {
  for (std::size_t clone;
       name.ends_with("]") && (clone = name.rfind(" [clone ")) != std::string::npos;)
    name.erase(clone);
  if (!name.ends_with(")")) return name;
  int depth = 0;
  for (std::size_t at = name.size(); at-- > 0;) {
    if (name[at] == ')') ++depth;
    if (name[at] == '(' && --depth == 0) {
      if (at == 0) return name;  // "(anonymous namespace)" alone: not a parameter list
      const bool none = at + 2 == name.size();
      return name.substr(0, at) + (none ? "()" : "(" + ellipsis + ")");
    }
  }
  return name;
}

// The allocating frame in a narrow table: the function shortened, the file by its name alone,
// the line kept ("load_weights(…) (oom_program.cpp:43)").
std::string short_frame_label(const Frame& frame, const std::string& ellipsis) {
  if (!frame.function) return frame_label(frame);
  std::string label = short_function(*frame.function, ellipsis);
  if (frame.file) {
    const std::size_t slash = frame.file->rfind('/');
    label += " (" + (slash == std::string::npos ? *frame.file : frame.file->substr(slash + 1));
    if (frame.line) label += ":" + std::to_string(*frame.line);
    label += ")";
  }
  return label;
}

}  // namespace gpumem::cli::attribution
