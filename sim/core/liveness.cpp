#include "liveness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpumem::sim {
namespace {

// Where the driver's namespace's processes show, and whether its pids are the caller's own (then
// kill() answers for them, also where /proc hides other users' processes).
struct DriverProc {
  std::string root = "/proc";
  bool own = true;
};

const DriverProc& driver_proc() {
  static const DriverProc proc = [] {
    DriverProc result;
    if (const char* root = std::getenv("GPUMEM_SIM_HOST_PROC"); root != nullptr && *root != '\0')
      result.root = root;
    char link[32] = {};
    const ssize_t n = ::readlink((result.root + "/self").c_str(), link, sizeof link - 1);
    result.own = n <= 0 || std::strtol(link, nullptr, 10) == ::getpid();
    return result;
  }();
  return proc;
}

// Reads <proc>/<pid>/stat; returns false when it cannot. `state` is the one-letter process state.
bool read_stat(pid_t pid, char* state, std::uint64_t* start_time) {
  char path[4200];
  std::snprintf(path, sizeof path, "%s/%d/stat", driver_proc().root.c_str(), static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[1024];
  const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (n <= 0) return false;
  buffer[n] = '\0';
  // The command name may hold spaces and parentheses: fields resume after the last ')'.
  const char* cursor = std::strrchr(buffer, ')');
  if (cursor == nullptr) return false;
  cursor += 2;
  *state = *cursor;
  // Field 3 is the state; field 22 the start time.
  for (int field = 3; field < 22; ++field) {
    cursor = std::strchr(cursor, ' ');
    if (cursor == nullptr) return false;
    ++cursor;
  }
  *start_time = std::strtoull(cursor, nullptr, 10);
  return true;
}

}  // namespace

pid_t driver_pid() {
  // <proc>/self names the caller in the procfs's namespace; a fork child asks again.
  char link[32] = {};
  const ssize_t n = ::readlink((driver_proc().root + "/self").c_str(), link, sizeof link - 1);
  const long pid = n > 0 ? std::strtol(link, nullptr, 10) : 0;
  return pid > 0 ? static_cast<pid_t>(pid) : ::getpid();
}

std::uint64_t process_start_time(pid_t pid) {
  char state = 0;
  std::uint64_t start = 0;
  return read_stat(pid, &state, &start) ? start : 0;
}

bool driver_pids_are_own() {
  return driver_proc().own;
}

bool process_exists(pid_t pid) {
  if (!driver_proc().own) {
    char path[4200];
    std::snprintf(path, sizeof path, "%s/%d", driver_proc().root.c_str(), static_cast<int>(pid));
    return ::access(path, F_OK) == 0;
  }
  return !(::kill(pid, 0) != 0 && errno == ESRCH);
}

bool process_alive(pid_t pid, std::uint64_t start_time) {
  if (!process_exists(pid)) return false;
  char state = 0;
  std::uint64_t start = 0;
  if (!read_stat(pid, &state, &start)) return errno == EACCES;  // hidden /proc: trust kill()
  if (state == 'Z' || state == 'X') return false;
  return start_time == 0 || start == start_time;
}

}  // namespace gpumem::sim
