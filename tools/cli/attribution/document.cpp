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

namespace {

// Callers named after the allocating frame, outward.
constexpr std::size_t kCallersShown = 3;

}  // namespace

std::string callers(const Document& document, const std::vector<std::size_t>& stack,
                    const std::string& arrow) {
  const std::vector<std::size_t> shown = shown_stack(document, stack);
  std::string text;
  for (std::size_t at = 1; at < shown.size() && at <= kCallersShown; ++at)
    text += (at == 1 ? "" : arrow) + frame_function(document.frames[shown[at]]);
  if (shown.size() > kCallersShown + 1)
    text += arrow + "(" + std::to_string(shown.size() - 1 - kCallersShown) + " more)";
  return printable(text);
}

const Frame& allocating(const Document& document, const std::vector<std::size_t>& stack) {
  return document
      .frames[stack[detail::attribution::allocating_position(document, stack).value_or(0)]];
}

}  // namespace gpumem::cli::attribution
