#include "gpumem/cache.hpp"

#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "support/diagnostics_log.hpp"

namespace gpumem {

namespace {

struct Hooks {
  std::mutex mutex;
  HookId next = 1;
  std::vector<std::pair<HookId, CacheReleaseHook>> registered;
};

Hooks& hooks() {
  static auto* instance = new Hooks;
  return *instance;
}

void note_failure(HookId id, const char* what) noexcept {
  try {
    std::string message = "cache-release hook " + std::to_string(id) + " failed";
    if (what != nullptr) message += std::string(": ") + what;
    support::record_diagnostic(message);
  } catch (...) {
  }
}

}  // namespace

HookId add_cache_release_hook(CacheReleaseHook hook) {
  Hooks& h = hooks();
  std::lock_guard lock(h.mutex);
  const HookId id = h.next++;
  h.registered.emplace_back(id, std::move(hook));
  return id;
}

bool remove_cache_release_hook(HookId id) noexcept {
  Hooks& h = hooks();
  std::lock_guard lock(h.mutex);
  for (auto it = h.registered.begin(); it != h.registered.end(); ++it) {
    if (it->first == id) {
      h.registered.erase(it);
      return true;
    }
  }
  return false;
}

void release_caches() noexcept {
  std::vector<std::pair<HookId, CacheReleaseHook>> to_run;
  {
    Hooks& h = hooks();
    std::lock_guard lock(h.mutex);
    try {
      to_run = h.registered;
    } catch (...) {
      support::record_diagnostic("cache-release hooks skipped: out of memory");
      return;
    }
  }
  // Run outside the lock: a hook may add or remove hooks, or read memory itself.
  for (auto& [id, hook] : to_run) {
    try {
      if (hook) hook();
    } catch (const std::exception& error) {
      note_failure(id, error.what());
    } catch (...) {
      note_failure(id, nullptr);
    }
  }
}

}  // namespace gpumem
