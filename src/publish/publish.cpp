// The writing side of the spool: one file per (process, scope), replaced by rename so that
// readers only ever see whole records.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/environment.hpp"
#include "gpumem/publish.hpp"
#include "identity/device_map.hpp"
#include "publish/spool_files.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem {
namespace {

bool fail(std::string message, std::string* error) {
  support::record_diagnostic(message);
  if (error != nullptr) *error = std::move(message);
  return false;
}

std::string errno_text(int error) {
  return std::strerror(error);
}

bool in_group(gid_t group) {
  if (::getegid() == group) return true;
  const int count = ::getgroups(0, nullptr);
  if (count <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  const int got = ::getgroups(count, groups.data());
  return got > 0 && std::find(groups.begin(), groups.begin() + got, group) != groups.begin() + got;
}

struct OpenSpool {
  int fd = -1;
  bool shared = false;  // group-shared: records are written 0640
};

// Opens the spool directory, creating it private when missing. It must be this user's and not
// writable by others, or a group-shared one (setgid, group-writable, a group of this process,
// not writable by others): a publisher must not write where others can swap its files.
OpenSpool open_spool(const std::filesystem::path& spool, std::string* error) {
  std::error_code ignored;
  if (spool.has_parent_path()) std::filesystem::create_directories(spool.parent_path(), ignored);
  if (::mkdir(spool.c_str(), 0700) != 0 && errno != EEXIST) {
    fail("cannot create the spool directory " + spool.string() + ": " + errno_text(errno), error);
    return {};
  }
  int fd = ::open(spool.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    fail("cannot open the spool directory " + spool.string() + ": " + errno_text(errno), error);
    return {};
  }
  struct stat info {};
  const bool read = ::fstat(fd, &info) == 0;
  const bool others_write = (info.st_mode & S_IWOTH) != 0;
  const bool own = read && !others_write && info.st_uid == ::geteuid();
  const bool shared = read && !others_write && !own && (info.st_mode & S_ISGID) != 0 &&
                      (info.st_mode & S_IWGRP) != 0 && in_group(info.st_gid);
  if (!own && !shared) {
    ::close(fd);
    fail("refusing the spool directory " + spool.string() +
             ": it must be a directory of this user that others cannot write, or a setgid "
             "directory of one of this user's groups that others cannot write",
         error);
    return {};
  }
  return {fd, shared || (info.st_mode & S_ISGID) != 0};
}

// The per-process cap: the record names this process has written, per spool directory.
bool within_scope_cap(const std::filesystem::path& spool, const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::set<std::string>> written;
  std::lock_guard lock(mutex);
  // Keyed by pid too: a forked child starts with none of its own.
  std::set<std::string>& names =
      written[std::to_string(::getpid()) + ":" + spool.lexically_normal().string()];
  if (names.count(name)) return true;
  if (names.size() >= max_scopes_per_process) return false;
  names.insert(name);
  return true;
}

std::string own_pid_namespace() {
  std::error_code failed;
  auto target = std::filesystem::read_symlink("/proc/self/ns/pid", failed);
  return failed ? std::string() : target.string();
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
  if (const char* dir = support::env_value("GPUMEM_SPOOL_DIR")) {
    return dir;
  }
  if (const char* runtime = support::env_value("XDG_RUNTIME_DIR");
      runtime != nullptr && *runtime == '/') {
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
  trace.unix_ms = support::unix_time_ms();
  trace.bytes = bytes;
  {
    // Read once per process (a forked child reads its own).
    static std::mutex mutex;
    static unsigned read_for = 0;
    static std::uint64_t start = 0;
    static std::string pid_namespace;
    std::lock_guard lock(mutex);
    if (read_for != trace.pid) {
      start = process_start_time("/proc", trace.pid);
      pid_namespace = own_pid_namespace();
      read_for = trace.pid;
    }
    trace.pid_start = start;
    trace.pid_namespace = pid_namespace;
  }

  const std::string name = detail::spool_file_name(trace.pid, scope);
  if (!within_scope_cap(spool, name)) {
    return fail("cannot publish '" + std::string(scope) + "' to " + spool.string() +
                    ": this process already published " + std::to_string(max_scopes_per_process) +
                    " scopes there (the limit); reuse scope names",
                error);
  }
  const OpenSpool opened = open_spool(spool, error);
  if (opened.fd < 0) return false;
  const int dir = opened.fd;
  static std::atomic<unsigned> sequence{0};
  const std::string temporary = detail::spool_temporary_name(trace.pid, sequence++);
  const mode_t mode = opened.shared ? 0640 : 0600;
  int fd =
      ::openat(dir, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) ::fchmod(fd, mode);  // whatever the umask
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
