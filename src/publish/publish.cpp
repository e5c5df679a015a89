// The writing side of the spool: one file per (process, scope), replaced by rename so that
// readers only ever see whole records.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpumem/diagnostics.hpp"
#include "gpumem/publish.hpp"
#include "identity/device_map.hpp"
#include "publish/spool_files.hpp"
#include "query/diagnostics_log.hpp"

namespace gpumem {
namespace {

bool fail(std::string message, std::string* error) {
  detail::record_diagnostic(message);
  if (error != nullptr) *error = std::move(message);
  return false;
}

std::string errno_text(int error) {
  return std::strerror(error);
}

// Opens the spool directory, creating it private when missing. Another user's directory, or one
// anybody may write, is refused: a publisher must not write where others can swap its files.
int open_spool(const std::filesystem::path& spool, std::string* error) {
  std::error_code ignored;
  if (spool.has_parent_path()) std::filesystem::create_directories(spool.parent_path(), ignored);
  if (::mkdir(spool.c_str(), 0700) != 0 && errno != EEXIST) {
    fail("cannot create the spool directory " + spool.string() + ": " + errno_text(errno), error);
    return -1;
  }
  int fd = ::open(spool.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    fail("cannot open the spool directory " + spool.string() + ": " + errno_text(errno), error);
    return -1;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_uid != ::geteuid() || (info.st_mode & S_IWOTH) != 0) {
    ::close(fd);
    fail("refusing the spool directory " + spool.string() +
             ": it must be a directory of this user that others cannot write",
         error);
    return -1;
  }
  return fd;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

}  // namespace

std::filesystem::path default_spool_directory() {
  if (const char* dir = std::getenv("GPUMEM_SPOOL_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/') {
    return std::filesystem::path(runtime) / "gpumem";
  }
  return "/tmp/gpumem-" + std::to_string(::getuid());
}

bool publish_trace(std::string_view scope, const TraceBytes& bytes, std::string* error) {
  return publish_trace(default_spool_directory(), scope, bytes, error);
}

bool publish_trace(const std::filesystem::path& spool, std::string_view scope,
                   const TraceBytes& bytes, std::string* error) {
  if (!detail::valid_scope(scope)) {
    return fail("cannot publish: a scope is 1 to " + std::to_string(max_scope_bytes) +
                    " bytes of text without control characters",
                error);
  }
  PublishedTrace trace;
  trace.scope = scope;
  trace.pid = static_cast<unsigned>(::getpid());
  if (bytes.device >= 0) {
    // From the cached device map: publishing each step must not cost NVML calls.
    const identity::MappedDevice* device = identity::find_device(bytes.device);
    if (device != nullptr && device->handle != nullptr) trace.uuid = device->uuid;
  }
  trace.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  trace.bytes = bytes;

  int dir = open_spool(spool, error);
  if (dir < 0) return false;
  static std::atomic<unsigned> sequence{0};
  const std::string name = detail::spool_file_name(trace.pid, scope);
  const std::string temporary = detail::spool_temporary_name(trace.pid, sequence++);
  int fd =
      ::openat(dir, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int saved = errno;
    ::close(dir);
    return fail("cannot publish to " + spool.string() + ": " + errno_text(saved), error);
  }
  // No fsync: rename already makes a process crash harmless, and the default spool lives in
  // tmpfs, which a power loss empties anyway. Publishing stays cheap enough for every step.
  bool ok = write_all(fd, format_spool_record(trace));
  int saved = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && ::renameat(dir, temporary.c_str(), dir, name.c_str()) != 0) {
    ok = false;
    saved = errno;
  }
  if (ok) {
    ::close(dir);
    return true;
  }
  ::unlinkat(dir, temporary.c_str(), 0);
  ::close(dir);
  return fail("cannot publish to " + spool.string() + ": " + errno_text(saved), error);
}

}  // namespace gpumem
