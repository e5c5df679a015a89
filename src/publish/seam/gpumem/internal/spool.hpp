// The exporter's side of the spool that gpumem::publish_trace writes (gpumem/publish.hpp): the
// record format, the one rule that decides whether a spool directory can be trusted (shared with
// the publishers), and the fair, bounded reading of a directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpumem/reading.hpp"

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

// One published result, as the exporter reads it back.
struct PublishedTrace {
  std::string scope;
  unsigned pid = 0;          // the publisher's pid in its own pid namespace
  std::string uuid;          // the device's UUID, empty where the publisher could not tell
  std::int64_t unix_ms = 0;  // when it was published
  TraceBytes bytes;
  std::string file;  // its name in the spool directory
  // The publisher's start time (clock ticks since boot, /proc/PID/stat), so that a reused pid is
  // not taken for the publisher; 0 where unknown (records of older writers).
  std::uint64_t pid_start = 0;
  std::string pid_namespace;  // "pid:[inode]" of the publisher, empty where unknown
};

// How much read_spool() reads per call.
struct SpoolLimits {
  // Records read per call, shared fairly: first among the users owning the files (the owner the
  // kernel gives the opened file, not anything the file says), then within each user among its
  // publishers, running ones first; so that nobody can hide another user's records, nor a
  // program with many scopes or a pile of stale files a running program's. The rest are
  // counted as dropped.
  std::size_t max_files = 1024;
  std::size_t max_file_bytes = 4096;  // larger files are malformed by definition
  std::size_t max_entries = 65536;    // directory entries looked at per call
};

// What the exporter does with records whose publisher is gone.
struct SpoolExpiry {
  std::int64_t now_unix_ms = 0;
  std::int64_t retention_ms = 300'000;   // a dead publisher's records stay this long
  std::filesystem::path proc = "/proc";  // where processes are looked up
  // Whether a record's publisher still runs; when unset, process_running(proc, pid, pid_start).
  std::function<bool(const PublishedTrace&)> running;
};

// What read_spool() found.
struct SpoolContents {
  std::vector<PublishedTrace> traces;  // sorted by scope, pid, pid namespace, then file name
  std::size_t malformed = 0;           // oversized, torn or foreign files (left alone)
  std::size_t unreadable = 0;          // files that could not be opened (permissions)
  std::size_t dropped = 0;             // beyond max_files or max_entries
  std::size_t expired = 0;             // records (and temporaries) of dead publishers removed
  // Why the directory was not read (spool_directory_refusal), empty when it was or is missing.
  std::string refused;
};

// Whether the spool directory can be trusted, by the caller as its reader; the same rule as the
// publishers apply to it: a real directory (not a symlink), owned by the caller or root, that
// others cannot write, and that its group may write only when it is setgid and sticky (a
// group-shared spool, mode 3770). Empty when it can be read, or does not exist (an empty spool);
// otherwise the reason, e.g. "owned by uid 1000, neither this user (uid 0) nor root".
std::string spool_directory_refusal(const std::filesystem::path& spool);

// Reads the well-formed records in `spool`, fairly bounded, once the directory passes
// spool_directory_refusal (else nothing, with the reason in `refused`).
//
// Never follows symlinks, ignores temporary files; a missing directory is an empty spool. A
// record's file name must agree with what the record says (pid, start time, pid namespace).
// With `expiry`, also removes the records of publishers that are no longer running (by pid and
// start time) once older than the retention, and temporaries their writers left; every file
// operation is relative to the opened directory. Never fails for a bad file.
// @throws std::bad_alloc when memory runs out
SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits = {},
                         const SpoolExpiry* expiry = nullptr);

// Whether process `pid` is running and started at `start` (clock ticks since boot) as seen in
// `proc` (e.g. "/proc", or the host's mounted elsewhere); a `start` of 0 never matches.
bool process_running(const std::filesystem::path& proc, unsigned pid, std::uint64_t start);

// The text of one spool file for `trace` (what publish_trace writes).
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string format_spool_record(const PublishedTrace& trace);
// True with `out` filled for a well-formed record; false for anything malformed.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) bool parse_spool_record(std::string_view text,
                                                              PublishedTrace& out);

}  // namespace gpumem::detail

#pragma GCC visibility pop
