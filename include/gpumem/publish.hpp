/**
 * @file gpumem/publish.hpp
 * @brief Publishing trace results to the node's exporter (`gpumem serve`), which shows them to
 * Prometheus as series labelled by scope.
 *
 * The channel is a spool directory: each (process, scope) owns one small file there, replaced
 * atomically (written to a temporary file in the same directory, then renamed over the old one),
 * so a program that crashes mid-publish loses nothing already published and leaves no torn file
 * behind. The exporter reads the directory at each collection; it keeps the results of a
 * process that has exited for a retention period (`gpumem serve --retention`), then deletes
 * them. Every function is thread-safe; figures are the bytes of TraceBytes.
 *
 * @code
 * #include <gpumem/publish.hpp>
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
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpumem/trace.hpp"

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
 * Two kinds of spool directory are accepted:
 *  - private (the default): this user's, not writable by others; created mode 0700 when
 *    missing; records are written 0600;
 *  - group-shared: a setgid directory of a group this process belongs to, writable by the
 *    group and not by others (e.g. `install -d -m 3770 -g gpumem DIR`); records are written
 *    0640, so that an exporter in the group can read every user's records.
 *
 * A symlink, or any other directory, is refused. The record names the device by its UUID from
 * the cached device map (no NVML call per publish).
 * @return true once the record is in place; false on failure (a bad scope, a refused or
 * unwritable directory, too many scopes), with the reason in gpumem::last_diagnostic() and in
 * `error` when given
 * @throws std::bad_alloc when memory runs out; never for a file-system failure
 */
bool publish_trace(std::string_view scope, const TraceBytes& bytes, std::string* error = nullptr);
/// @copydoc publish_trace(std::string_view, const TraceBytes&, std::string*)
bool publish_trace(const std::filesystem::path& spool, std::string_view scope,
                   const TraceBytes& bytes, std::string* error = nullptr);

/// One published result, as the exporter reads it back.
struct PublishedTrace {
  std::string scope;
  unsigned pid = 0;
  std::string uuid;          ///< the device's UUID, empty where the publisher could not tell
  std::int64_t unix_ms = 0;  ///< when it was published
  TraceBytes bytes;
  std::string file;  ///< its name in the spool directory
  /// The publisher's start time (clock ticks since boot, /proc/PID/stat), so that a reused pid is
  /// not taken for the publisher; 0 where unknown (records of older writers).
  std::uint64_t pid_start = 0;
  std::string pid_namespace;  ///< "pid:[inode]" of the publisher, empty where unknown
};

/// How much read_spool() reads per call.
struct SpoolLimits {
  /// Records read per call, shared fairly: each publisher (pid) in turn gets one more until the
  /// limit or the records run out, so that a program with thousands of scopes cannot hide the
  /// others'. The rest are counted as dropped.
  std::size_t max_files = 1024;
  std::size_t max_file_bytes = 4096;  ///< larger files are malformed by definition
  std::size_t max_entries = 65536;    ///< directory entries looked at per call
};

/// What the exporter does with records whose publisher is gone.
struct SpoolExpiry {
  std::int64_t now_unix_ms = 0;
  std::int64_t retention_ms = 300'000;   ///< a dead publisher's records stay this long
  std::filesystem::path proc = "/proc";  ///< where processes are looked up
  /// Whether a record's publisher still runs; when unset, process_running(proc, pid, pid_start).
  std::function<bool(const PublishedTrace&)> running;
};

/// What read_spool() found.
struct SpoolContents {
  std::vector<PublishedTrace> traces;  ///< sorted by scope, then pid
  std::size_t malformed = 0;           ///< oversized, torn or foreign files (left alone)
  std::size_t unreadable = 0;          ///< files that could not be opened (permissions)
  std::size_t dropped = 0;             ///< beyond max_files or max_entries
  std::size_t expired = 0;             ///< records (and temporaries) of dead publishers removed
};

/**
 * @brief Reads the well-formed records in `spool`, fairly bounded (the exporter's side).
 *
 * Never follows symlinks, ignores temporary files; a missing directory is an empty spool. With
 * `expiry`, also removes the records of publishers that are no longer running (by pid and start
 * time) once older than the retention, and temporaries their writers left; every file operation
 * is relative to the opened directory.
 * @return the records and the counts of what was skipped; never fails for a bad file
 * @throws std::bad_alloc when memory runs out
 */
SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits = {},
                         const SpoolExpiry* expiry = nullptr);

/**
 * @return whether process `pid` is running and started at `start` (clock ticks since boot) as
 * seen in `proc` (e.g. "/proc", or the host's mounted elsewhere); a `start` of 0 never matches
 */
bool process_running(const std::filesystem::path& proc, unsigned pid, std::uint64_t start);
/// @return the start time of `pid` in `proc` (clock ticks since boot), 0 when it cannot be read
std::uint64_t process_start_time(const std::filesystem::path& proc, unsigned pid);

/// @return the text of one spool file for `trace` (what publish_trace writes)
std::string format_spool_record(const PublishedTrace& trace);
/// @return true with `out` filled for a well-formed record; false for anything malformed
bool parse_spool_record(std::string_view text, PublishedTrace& out);

}  // namespace gpumem

#pragma GCC visibility pop
