// The reading side of the spool: bounded in entries, files and bytes, fair among the users who
// own the files and then among their publishers, never following links, and indifferent to
// anything in the directory that is not a whole record. Every file operation is relative to the
// opened directory, which must pass the rule the publishers apply (spool_directory).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include "gpumem/internal/procfs.hpp"
#include "gpumem/internal/spool.hpp"
#include "publish/spool_directory.hpp"
#include "publish/spool_files.hpp"

namespace gpumem::detail {
namespace {

enum class ReadResult { ok, malformed, unreadable, replaced };

// The file's text, when it is a small regular file still owned by `owner`.
ReadResult read_small_file(int dir, const char* name, std::size_t max_bytes, uid_t owner,
                           std::string& text) {
  int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    // A symlink (ELOOP) or a vanished file is not a record; a permission problem is worth
    // telling apart, since it means the exporter lacks access (a set-up mistake).
    return errno == EACCES || errno == EPERM ? ReadResult::unreadable : ReadResult::malformed;
  }
  struct stat info {};
  bool ok = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
            static_cast<std::size_t>(info.st_size) <= max_bytes;
  if (ok && info.st_uid != owner) {
    // Replaced since the directory was listed: its share went to the owner it had then.
    ::close(fd);
    return ReadResult::replaced;
  }
  if (ok) {
    text.assign(max_bytes + 1, '\0');
    std::size_t size = 0;
    while (size < text.size()) {
      ssize_t got = ::read(fd, text.data() + size, text.size() - size);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ok = got == 0;
        break;
      }
      size += static_cast<std::size_t>(got);
    }
    ok = ok && size <= max_bytes;
    text.resize(size);
  }
  ::close(fd);
  return ok ? ReadResult::ok : ReadResult::malformed;
}

// Whether the writer a name claims runs now (which needs its start time).
bool writer_running(const SpoolWriter& writer, const SpoolExpiry* expiry) {
  if (writer.start == 0) return false;
  PublishedTrace trace;
  trace.pid = writer.pid;
  trace.pid_start = writer.start;
  trace.pid_namespace = pid_namespace_text(writer.pid_namespace);
  if (expiry != nullptr && expiry->running) return expiry->running(trace);
  // Without the exporter's view of other namespaces, only this one's processes can be told.
  static const std::uint64_t own = procfs::pid_namespace("/proc", "self").value_or(0);
  if (writer.pid_namespace != 0 && writer.pid_namespace != own) return false;
  return process_running(expiry != nullptr ? expiry->proc : "/proc", writer.pid, writer.start);
}

// Whether a record says what its name says: a name of this writer's format must be exactly the
// one its writer would give it; an older writer's "<pid>-…" name must at least name its pid.
bool name_agrees(const SpoolWriter& named, const std::string& file, const PublishedTrace& trace) {
  if (!named.full) return named.pid == trace.pid;
  const SpoolWriter writer{trace.pid, pid_namespace_inode(trace.pid_namespace), trace.pid_start,
                           true};
  return (writer.pid_namespace != 0) == !trace.pid_namespace.empty() &&
         spool_file_name(writer, trace.scope) == file;
}

// One from each group in turn until `limit` or the groups run out.
std::vector<const std::string*> round_robin(
    const std::vector<const std::vector<std::string>*>& groups, std::size_t limit) {
  std::vector<const std::string*> chosen;
  for (std::size_t round = 0; chosen.size() < limit; ++round) {
    bool any = false;
    for (const auto* names : groups) {
      if (round >= names->size()) continue;
      any = true;
      if (chosen.size() < limit) chosen.push_back(&(*names)[round]);
    }
    if (!any) break;
  }
  return chosen;
}

}  // namespace

bool process_running(const std::filesystem::path& proc, unsigned pid, std::uint64_t start) {
  return pid != 0 && start != 0 && procfs::start_time(proc, std::to_string(pid)) == start;
}

SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits,
                         const SpoolExpiry* expiry) {
  SpoolContents contents;
  const SpoolDirectory opened = open_spool_directory(spool, SpoolRole::reader);
  if (opened.fd < 0) {
    contents.refused = opened.refusal;
    return contents;
  }
  const int dir_fd = opened.fd;
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return contents;
  }
  // Names first, grouped by the owner the kernel gives each file (which a file cannot fake),
  // then by the writer its name claims.
  std::map<uid_t, std::map<SpoolWriter, std::vector<std::string>>> owners;
  std::vector<std::string> temporaries;
  std::size_t entries = 0;
  std::size_t records = 0;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    const bool record = is_spool_record_name(name);
    const bool temporary = is_spool_temporary_name(name);
    if (!record && !temporary) continue;
    if (entries++ >= limits.max_entries) {
      contents.dropped += record ? 1 : 0;
      continue;
    }
    if (!record) {
      temporaries.emplace_back(name);
      continue;
    }
    struct stat info {};
    if (::fstatat(dir_fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(info.st_mode) || static_cast<std::size_t>(info.st_size) > limits.max_file_bytes) {
      ++contents.malformed;  // a link, a vanished file, anything but a small regular file
      continue;
    }
    owners[info.st_uid][spool_record_writer(name).value_or(SpoolWriter{})].emplace_back(name);
    ++records;
  }

  // Each owner's share of the files read: one more each in turn, so that no user can crowd out
  // another's records however many files it makes.
  std::vector<std::size_t> counts;
  for (const auto& [uid, writers] : owners) {
    std::size_t count = 0;
    for (const auto& [writer, names] : writers) count += names.size();
    counts.push_back(count);
  }
  std::vector<std::size_t> shares(counts.size(), 0);
  std::size_t taken = 0;
  for (std::size_t round = 0; taken < limits.max_files; ++round) {
    bool any = false;
    for (std::size_t i = 0; i < counts.size() && taken < limits.max_files; ++i) {
      if (counts[i] <= round) continue;
      any = true;
      ++shares[i];
      ++taken;
    }
    if (!any) break;
  }
  // Within an owner, its publishers in turn; where its share does not cover its files, the
  // publishers that run now first, so that a pile of stale or forged names cannot hide them.
  std::vector<std::pair<uid_t, const std::string*>> chosen;
  std::size_t index = 0;
  for (const auto& [uid, writers] : owners) {
    const std::size_t share = shares[index];
    const bool short_of_share = share < counts[index++];
    std::vector<const std::vector<std::string>*> running;
    std::vector<const std::vector<std::string>*> others;
    for (const auto& [writer, names] : writers) {
      (short_of_share && writer_running(writer, expiry) ? running : others).push_back(&names);
    }
    std::vector<const std::string*> names = round_robin(running, share);
    for (const std::string* name : round_robin(others, share - names.size())) names.push_back(name);
    for (const std::string* name : names) chosen.emplace_back(uid, name);
  }
  contents.dropped += records - chosen.size();

  std::string text;
  for (const auto& [uid, name] : chosen) {
    PublishedTrace trace;
    const ReadResult result =
        read_small_file(dir_fd, name->c_str(), limits.max_file_bytes, uid, text);
    if (result == ReadResult::unreadable) {
      ++contents.unreadable;
      continue;
    }
    if (result == ReadResult::replaced) {
      ++contents.dropped;
      continue;
    }
    if (result != ReadResult::ok || !parse_spool_record(text, trace) ||
        !name_agrees(spool_record_writer(*name).value_or(SpoolWriter{}), *name, trace)) {
      ++contents.malformed;
      continue;
    }
    trace.file = *name;
    if (expiry != nullptr &&
        !(expiry->running ? expiry->running(trace)
                          : process_running(expiry->proc, trace.pid, trace.pid_start)) &&
        expiry->now_unix_ms - trace.unix_ms > expiry->retention_ms) {
      if (::unlinkat(dir_fd, name->c_str(), 0) == 0) ++contents.expired;
      continue;
    }
    contents.traces.push_back(std::move(trace));
  }
  if (expiry != nullptr) {
    for (const std::string& name : temporaries) {
      // A temporary lives for the instant of a publish: one whose writer is gone is litter.
      const auto writer = spool_temporary_writer(name);
      const bool alive =
          writer && (writer->start != 0
                         ? writer_running(*writer, expiry)
                         : std::filesystem::exists(expiry->proc / std::to_string(writer->pid)));
      if (!alive && ::unlinkat(dir_fd, name.c_str(), 0) == 0) ++contents.expired;
    }
  }
  ::closedir(dir);
  std::sort(contents.traces.begin(), contents.traces.end(),
            [](const PublishedTrace& a, const PublishedTrace& b) {
              return std::tie(a.scope, a.pid, a.pid_namespace, a.file) <
                     std::tie(b.scope, b.pid, b.pid_namespace, b.file);
            });
  return contents;
}

}  // namespace gpumem::detail
