/**
 * @file gpumem/publish.hpp
 * @brief Publishing trace results to the node's exporter (`gpumem serve`), which shows them to
 * Prometheus as series labelled by scope.
 *
 * The channel is a spool directory: each (process, scope) owns one small file there, named by
 * the process's pid, pid namespace and start time (so that processes in different containers
 * sharing one spool never collide), replaced atomically (written to a temporary file in the same
 * directory, then renamed over the old one), so a program that crashes mid-publish loses nothing
 * already published and leaves no torn file behind. The exporter reads the directory at each
 * collection; it keeps the results of a process that has exited for a retention period
 * (`gpumem serve --retention`), then deletes them. Every function is thread-safe; figures are
 * the bytes of TraceBytes.
 *
 * @code
 * #include <gpumem/publish.hpp>
 * #include <gpumem/trace.hpp>
 *
 * gpumem::GPUMemTrace trace(gpumem::TraceOptions{.silent = true});
 * for (auto& batch : batches) {
 *   train(batch);
 *   std::string error;
 *   if (!gpumem::publish_trace("train step", trace.data_bytes(), &error)) {
 *     std::fprintf(stderr, "%s
", error.c_str());  // the step goes on either way
 *   }
 *   trace.reset();
 * }
 * @endcode
 */
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "gpumem/reading.hpp"

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/**
 * @return `GPUMEM_SPOOL_DIR` if set and not empty, else `$XDG_RUNTIME_DIR/gpumem` (an absolute
 * XDG_RUNTIME_DIR only), else `/tmp/gpumem-<uid>`
 * @throws std::bad_alloc when the path cannot be made
 */
std::filesystem::path default_spool_directory();

/// Longest scope name accepted, in bytes. Scopes are UTF-8 text without control characters.
inline constexpr std::size_t max_scope_bytes = 256;
/// Distinct scopes one process may publish to one spool directory; more are refused, so that one
/// program cannot grow the spool without bound.
inline constexpr std::size_t max_scopes_per_process = 64;

/**
 * @brief Publishes `bytes` as the latest result of `scope` for this process, replacing its
 * previous one, in default_spool_directory() or in `spool`.
 *
 * The directory must not be writable by others; the exporter applies the same rule. Two kinds
 * are accepted:
 *  - private (the default): this user's, not writable by its group; created mode 0700 when
 *    missing; records are written 0600;
 *  - group-shared: setgid and sticky, writable by its group, of which this process is a member
 *    unless it owns the directory (e.g. `install -d -o root -g gpumem -m 3770 DIR`); records are
 *    written 0640, so that an exporter in the group can read every user's records.
 *
 * A symlink, or any other directory, is refused, with the reason. The record names the device by
 * its UUID from the cached device map (no NVML call per publish).
 * @return true once the record is in place; false on failure (a bad scope, a refused or
 * unwritable directory, too many scopes), with the reason in gpumem::last_diagnostic() and in
 * `error` when given
 * @throws std::bad_alloc when memory runs out; never for a file-system failure
 */
bool publish_trace(std::string_view scope, const TraceBytes& bytes, std::string* error = nullptr);
/// @copydoc publish_trace(std::string_view, const TraceBytes&, std::string*)
bool publish_trace(const std::filesystem::path& spool, std::string_view scope,
                   const TraceBytes& bytes, std::string* error = nullptr);

}  // namespace gpumem

#pragma GCC visibility pop
