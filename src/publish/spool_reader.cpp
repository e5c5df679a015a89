// The reading side of the spool: bounded in entries, files and bytes, fair among publishers,
// never following links, and indifferent to anything in the directory that is not a whole
// record. Every file operation is relative to the opened directory.
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

#include "gpumem/publish.hpp"
#include "publish/spool_files.hpp"

namespace gpumem {
namespace {

enum class ReadResult { ok, malformed, unreadable };

// The file's text, when it is a small regular file.
ReadResult read_small_file(int dir, const char* name, std::size_t max_bytes, std::string& text) {
  int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    // A symlink (ELOOP) or a vanished file is not a record; a permission problem is worth
    // telling apart, since it means the exporter lacks access (a set-up mistake).
    return errno == EACCES || errno == EPERM ? ReadResult::unreadable : ReadResult::malformed;
  }
  struct stat info {};
  bool ok = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
            static_cast<std::size_t>(info.st_size) <= max_bytes;
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

// The pid a record's file name starts with ("<pid>-…"), 0 when there is none.
unsigned pid_of_name(std::string_view name) {
  unsigned pid = 0;
  std::from_chars(name.data(), name.data() + name.size(), pid);
  return pid;
}

}  // namespace

std::uint64_t process_start_time(const std::filesystem::path& proc, unsigned pid) {
  std::ifstream stat(proc / std::to_string(pid) / "stat");
  std::string text;
  std::getline(stat, text);
  // "pid (comm) state ppid …": comm may hold anything, so fields are counted after its last ')'.
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::string_view rest = std::string_view(text).substr(paren + 1);
  for (int field = 3; field <= 22; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const std::size_t end = std::min(rest.find(' '), rest.size());
    if (field == 22) {
      std::uint64_t start = 0;
      auto [at, error] = std::from_chars(rest.data(), rest.data() + end, start);
      return error == std::errc{} && at == rest.data() + end ? start : 0;
    }
    rest.remove_prefix(end);
  }
  return 0;
}

bool process_running(const std::filesystem::path& proc, unsigned pid, std::uint64_t start) {
  return pid != 0 && start != 0 && process_start_time(proc, pid) == start;
}

SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits,
                         const SpoolExpiry* expiry) {
  SpoolContents contents;
  int dir_fd = ::open(spool.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return contents;
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return contents;
  }
  // Names first, grouped by publisher; then one per publisher in turn.
  std::map<unsigned, std::vector<std::string>> by_pid;
  std::vector<std::string> temporaries;
  std::size_t entries = 0;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    const bool record = detail::is_spool_record_name(name);
    const bool temporary = detail::is_spool_temporary_name(name);
    if (!record && !temporary) continue;
    if (entries++ >= limits.max_entries) {
      contents.dropped += record ? 1 : 0;
      continue;
    }
    if (record) {
      by_pid[pid_of_name(name)].emplace_back(name);
    } else {
      temporaries.emplace_back(name);
    }
  }
  std::vector<const std::string*> chosen;
  for (std::size_t round = 0; chosen.size() < limits.max_files; ++round) {
    bool any = false;
    for (auto& [pid, names] : by_pid) {
      if (round >= names.size()) continue;
      any = true;
      if (chosen.size() < limits.max_files) chosen.push_back(&names[round]);
    }
    if (!any) break;
  }
  std::size_t records = 0;
  for (const auto& [pid, names] : by_pid) records += names.size();
  contents.dropped += records - chosen.size();

  std::string text;
  for (const std::string* name : chosen) {
    PublishedTrace trace;
    const ReadResult result = read_small_file(dir_fd, name->c_str(), limits.max_file_bytes, text);
    if (result == ReadResult::unreadable) {
      ++contents.unreadable;
      continue;
    }
    if (result != ReadResult::ok || !parse_spool_record(text, trace)) {
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
      const auto writer = detail::spool_temporary_writer(name);
      const bool alive = writer && std::filesystem::exists(expiry->proc / std::to_string(*writer));
      if (!alive && ::unlinkat(dir_fd, name.c_str(), 0) == 0) ++contents.expired;
    }
  }
  ::closedir(dir);
  std::sort(contents.traces.begin(), contents.traces.end(),
            [](const PublishedTrace& a, const PublishedTrace& b) {
              return a.scope != b.scope ? a.scope < b.scope : a.pid < b.pid;
            });
  return contents;
}

}  // namespace gpumem
