// What the summary of `gpumem run --attribute` adds (run_attribution.hpp).
#include "run_attribution.hpp"

#include "attribution/views.hpp"

namespace gpumem::cli {

std::string attribution_summary(const attribution::Document& document, std::size_t top,
                                const attribution::TextOptions& options) {
  std::string text;
  std::string error;
  if (const auto peak = attribution::choose_snapshot(document, "peak", &error)) {
    const attribution::Snapshot& snapshot = document.snapshots[*peak];
    text += "\ngpumem: at the highest process peak, who held the memory:\n";
    text += attribution::top_table(document, snapshot, top, options);
  }
  for (const attribution::Snapshot& snapshot : document.snapshots) {
    if (snapshot.what != "oom") continue;
    text += "\ngpumem: an allocation ran out of memory; who held the memory then:\n";
    text += attribution::top_table(document, snapshot, top, options);
  }
  return text;
}

}  // namespace gpumem::cli
