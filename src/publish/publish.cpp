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

#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/environment.hpp"
#include "gpumem/internal/procfs.hpp"
#include "gpumem/internal/spool.hpp"
#include "gpumem/publish.hpp"
#include "identity/device_map.hpp"
#include "publish/spool_directory.hpp"
#include "publish/spool_files.hpp"
#include "support/diagnostics_log.hpp"

namespace gpumem {
namespace {

using detail::PublishedTrace;
using detail::SpoolWriter;

bool fail(std::string message, std::string* error) {
  support::record_diagnostic(message);
  if (error != nullptr) *error = std::move(message);
  return false;
}

std::string errno_text(int error) {
  return std::strerror(error);
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

// Who this process is, read once per process (a forked child reads its own): its start time from
// /proc/self (its own entry whatever pid namespace /proc was mounted for) and its pid namespace.
SpoolWriter own_writer() {
  static std::mutex mutex;
  static SpoolWriter writer;
  const auto pid = static_cast<unsigned>(::getpid());
  std::lock_guard lock(mutex);
  if (writer.pid != pid) {
    writer.pid = pid;
    writer.start = procfs::start_time("/proc", "self").value_or(0);
    writer.pid_namespace = procfs::pid_namespace("/proc", "self").value_or(0);
  }
  return writer;
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
  const SpoolWriter writer = own_writer();
  trace.pid_start = writer.start;
  trace.pid_namespace = detail::pid_namespace_text(writer.pid_namespace);

  const std::string name = detail::spool_file_name(writer, scope);
  if (!within_scope_cap(spool, name)) {
    return fail("cannot publish '" + std::string(scope) + "' to " + spool.string() +
                    ": this process already published " + std::to_string(max_scopes_per_process) +
                    " scopes there (the limit); reuse scope names",
                error);
  }
  // A publisher must not write where others can swap its files: the rule the exporter applies.
  const detail::SpoolDirectory opened =
      detail::open_spool_directory(spool, detail::SpoolRole::writer);
  if (opened.fd < 0) {
    return fail("refusing the spool directory " + spool.string() + ": " + opened.refusal, error);
  }
  const int dir = opened.fd;
  struct stat info {};
  // Setgid: the records get the directory's group, whose members (the exporter) read them.
  const bool shared = ::fstat(dir, &info) == 0 && (info.st_mode & S_ISGID) != 0;
  static std::atomic<unsigned> sequence{0};
  const std::string temporary = detail::spool_temporary_name(writer, sequence++);
  const mode_t mode = shared ? 0640 : 0600;
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
  bool ok = write_all(fd, detail::format_spool_record(trace));
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
