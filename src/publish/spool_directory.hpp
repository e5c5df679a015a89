// Whether a spool directory can be trusted: one rule for the publishers that write records into
// it and the exporter that reads them, so neither uses a directory the other would refuse.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace gpumem::detail {

enum class SpoolRole { writer, reader };

// The rule, on the directory's status as fstat gives it for the opened directory, for a caller of
// effective uid `caller`: owned by the caller or root (or, for a writer, a group-shared spool of
// one of its groups, whoever owns it: the exporter's account, say); not writable by others;
// writable by its group only when setgid and sticky (a group-shared spool: records get the
// directory's group, and members cannot replace or remove each other's). Empty when trusted,
// otherwise why not (a phrase, e.g. "others may write it (mode 0777)").
std::string spool_directory_refusal(const struct stat& info, uid_t caller, SpoolRole role);

struct SpoolDirectory {
  int fd = -1;           // the opened directory when trusted (the caller closes it), else -1
  bool missing = false;  // it does not exist (a reader's empty spool)
  std::string refusal;   // why it was not opened, empty when it was or is missing
};

// Opens `spool` (never through a symlink) and applies the rule; a writer creates it first, mode
// 0700, when missing.
SpoolDirectory open_spool_directory(const std::filesystem::path& spool, SpoolRole role);

}  // namespace gpumem::detail
