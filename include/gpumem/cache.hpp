// Cache-release hooks: a caching allocator (libtorch, CuPy, a custom pool) registers how to give
// cached blocks back, and the `_no_cache` reads and traces run every hook before measuring.
#pragma once

#include <cstdint>
#include <functional>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

using CacheReleaseHook = std::function<void()>;
using HookId = std::uint64_t;

HookId add_cache_release_hook(CacheReleaseHook hook);
// false when the id is unknown (already removed). A release_caches() already running on another
// thread may still call the hook once after this returns: hooks run outside gpumem's lock, so
// that a hook may itself add or remove hooks. Keep what a hook uses alive until such calls end.
bool remove_cache_release_hook(HookId id) noexcept;
// Runs every registered hook, in registration order; an exception from a hook is recorded as a
// diagnostic and does not stop the others.
void release_caches() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
