/**
 * @file gpumem/cache.hpp
 * @brief Cache-release hooks: a caching allocator (libtorch, CuPy, a custom pool) registers how
 * to give its cached blocks back, and the `_no_cache` reads and the traces run every hook before
 * measuring, as fastai.utils.mem emptied PyTorch's cache.
 *
 * @code
 * #include <gpumem/cache.hpp>
 *
 * const gpumem::HookId hook = gpumem::add_cache_release_hook([&pool] { pool.release_unused(); });
 * const std::int64_t used = gpumem::gpu_mem_get_used_no_cache();  // runs the hook, then reads
 * gpumem::remove_cache_release_hook(hook);
 * @endcode
 */
#pragma once

#include <cstdint>
#include <functional>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/// Gives cached device memory back to the driver. May throw: the exception is recorded.
using CacheReleaseHook = std::function<void()>;
/// Names a registered hook; never 0, never reused within a process.
using HookId = std::uint64_t;

/**
 * @brief Registers `hook`, to run after those already registered. Thread-safe.
 * @return the id that removes it
 * @throws std::bad_alloc when the hook cannot be stored
 */
HookId add_cache_release_hook(CacheReleaseHook hook);

/**
 * @brief Unregisters a hook. Thread-safe.
 *
 * A release_caches() already running on another thread may still call the hook once after this
 * returns: hooks run outside gpumem's lock, so that a hook may itself add or remove hooks. Keep
 * what a hook uses alive until such calls end.
 * @return false when the id is unknown (already removed)
 */
bool remove_cache_release_hook(HookId id) noexcept;

/**
 * @brief Runs every registered hook, in registration order. Thread-safe.
 *
 * An exception from a hook is recorded as a diagnostic and does not stop the others.
 */
void release_caches() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
