// Publishing trace results to the node's exporter (`gpumem serve`), which shows them to
// Prometheus as series labelled by scope.
//
// The channel is a spool directory: each (process, scope) owns one small file there, replaced
// atomically (written to a temporary file in the same directory, then renamed over the old one),
// so a program that crashes mid-publish loses nothing already published and leaves no torn file
// behind. The exporter reads the directory at scrape time; it keeps the results of a process that
// has exited for a retention period (`gpumem serve --retention`), then deletes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gpumem/trace.hpp"

namespace gpumem {

// GPUMEM_SPOOL_DIR if set, else $XDG_RUNTIME_DIR/gpumem, else /tmp/gpumem-<uid>.
std::filesystem::path default_spool_directory();

// Longest scope name accepted, in bytes. Scopes are UTF-8 text without control characters.
inline constexpr std::size_t max_scope_bytes = 256;

// Publishes `bytes` as the latest result of `scope` for this process, replacing its previous
// one. Creates the spool directory (mode 0700) when missing; refuses one that is a symlink,
// another user's, or writable by others. false on failure, with the reason in
// gpumem::last_diagnostic() and in `error` when given.
bool publish_trace(std::string_view scope, const TraceBytes& bytes, std::string* error = nullptr);
bool publish_trace(const std::filesystem::path& spool, std::string_view scope,
                   const TraceBytes& bytes, std::string* error = nullptr);

// One published result, as the exporter reads it back.
struct PublishedTrace {
  std::string scope;
  unsigned pid = 0;
  std::string uuid;          // the device's UUID, empty where the publisher could not tell
  std::int64_t unix_ms = 0;  // when it was published
  TraceBytes bytes;
  std::filesystem::path file;
};

struct SpoolLimits {
  std::size_t max_files = 1024;       // files read per call; the rest are counted as skipped
  std::size_t max_file_bytes = 4096;  // larger files are malformed by definition
};

struct SpoolContents {
  std::vector<PublishedTrace> traces;  // sorted by scope, then pid
  std::size_t malformed = 0;           // unreadable, oversized or torn files (left alone)
  std::size_t skipped = 0;             // beyond max_files
};

// Reads every well-formed result in `spool`. Never follows symlinks, ignores temporary files;
// a missing directory is an empty spool.
SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits = {});

// Text of one spool file, and its parser (nullopt-like: false for anything malformed).
std::string format_spool_record(const PublishedTrace& trace);
bool parse_spool_record(std::string_view text, PublishedTrace& out);

}  // namespace gpumem
