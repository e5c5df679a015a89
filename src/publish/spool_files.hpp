// Names of the files in a spool directory, shared by the writer and the reader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpumem::detail {

// Who wrote a spool file, as its name says: the pid in the writer's own pid namespace, the
// namespace's inode and the writer's start time (0 where the writer could not read them, and in
// the names of older writers, "<pid>-<hash>.trace" and ".<pid>-<sequence>.tmp"). A claim only:
// the reader checks it against the record and, for fairness, against the running processes.
// A file name has a field for each, so "unknown" (procfs's nullopt) is 0 there: no namespace file
// has inode 0, and no process starts at tick 0 after boot.
struct SpoolWriter {
  unsigned pid = 0;
  std::uint64_t pid_namespace = 0;
  std::uint64_t start = 0;
  bool full = false;  // the name says all three (false: an older writer's name, the pid alone)
  auto operator<=>(const SpoolWriter&) const = default;
};

// "<pid>-<pid namespace inode>-<start time>-<16 hex digits of the scope's FNV-1a hash>.trace":
// one file per process and scope, unique across pid namespaces (containers sharing a spool).
std::string spool_file_name(const SpoolWriter& writer, std::string_view scope);
// ".<pid>-<pid namespace inode>-<start time>-<sequence>.tmp": hidden, and never taken for a
// record.
std::string spool_temporary_name(const SpoolWriter& writer, unsigned sequence);
bool is_spool_record_name(std::string_view name);
bool is_spool_temporary_name(std::string_view name);
// Text without control characters: what a record's lines may hold.
bool is_plain_text(std::string_view text);
// A scope as publish_trace accepts it: 1 to max_scope_bytes bytes of plain text.
bool valid_scope(std::string_view scope);

// The writer a record's name claims (the pid alone for an older writer's name); nullopt for a
// name that starts with no pid.
std::optional<SpoolWriter> spool_record_writer(std::string_view name);
// The writer of a temporary file, from its name; nullopt for any other name.
std::optional<SpoolWriter> spool_temporary_writer(std::string_view name);
// "pid:[inode]", as /proc/PID/ns/pid reads; empty for 0 (unknown).
std::string pid_namespace_text(std::uint64_t inode);
// The inode in "pid:[inode]"; 0 for anything else.
std::uint64_t pid_namespace_inode(std::string_view text);

}  // namespace gpumem::detail
