#include "process_labels.hpp"

namespace gpumem::serve {

const ProcessLabels& ProcessLabelCache::labels(unsigned pid, std::int64_t now_ns) {
  Known& known = known_[pid];
  const bool fresh = known.read_ns != 0 && known.collection != 0 &&
                     now_ns - known.read_ns < max_age_ns_ && now_ns >= known.read_ns;
  if (!fresh) {
    known.labels.name = directory_.process_name(pid);
    known.labels.container = directory_.identify(pid);
    known.read_ns = now_ns == 0 ? 1 : now_ns;
    ++reads_;
  }
  known.collection = collection_;
  return known.labels;
}

void ProcessLabelCache::end_collection() {
  std::erase_if(known_,
                [this](const auto& entry) { return entry.second.collection != collection_; });
  ++collection_;
}

}  // namespace gpumem::serve
