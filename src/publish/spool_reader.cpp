// The reading side of the spool: bounded in files and bytes, never following links, and
// indifferent to anything in the directory that is not a whole record.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "gpumem/publish.hpp"
#include "publish/spool_files.hpp"

namespace gpumem {
namespace {

// The file's text, or false when it is not a small regular file.
bool read_small_file(int dir, const char* name, std::size_t max_bytes, std::string& text) {
  int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
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
  return ok;
}

}  // namespace

SpoolContents read_spool(const std::filesystem::path& spool, const SpoolLimits& limits) {
  SpoolContents contents;
  int dir_fd = ::open(spool.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return contents;
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return contents;
  }
  std::size_t considered = 0;
  std::string text;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (!detail::is_spool_record_name(name)) continue;
    if (considered++ >= limits.max_files) {
      ++contents.skipped;
      continue;
    }
    PublishedTrace trace;
    if (read_small_file(dir_fd, entry->d_name, limits.max_file_bytes, text) &&
        parse_spool_record(text, trace)) {
      trace.file = spool / entry->d_name;
      contents.traces.push_back(std::move(trace));
    } else {
      ++contents.malformed;
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
