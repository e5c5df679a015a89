#include "support/diagnostics_log.hpp"

#include <mutex>
#include <unordered_set>
#include <vector>

#include "gpumem/diagnostics.hpp"

namespace gpumem {

namespace {

struct Log {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::unordered_set<std::string> seen;
};

// Leaked so that queries made during static destruction can still record.
Log& log() {
  static auto* instance = new Log;
  return *instance;
}

}  // namespace

namespace support {

void record_diagnostic(const std::string& message) {
  if (message.empty()) return;
  Log& l = log();
  std::lock_guard lock(l.mutex);
  try {
    if (l.seen.insert(message).second) l.messages.push_back(message);
  } catch (...) {
    // Out of memory: losing a diagnostic beats failing the query that reported it.
  }
}

}  // namespace support

std::vector<std::string> diagnostics() {
  Log& l = log();
  std::lock_guard lock(l.mutex);
  return l.messages;
}

std::string last_diagnostic() {
  Log& l = log();
  std::lock_guard lock(l.mutex);
  return l.messages.empty() ? std::string() : l.messages.back();
}

}  // namespace gpumem
