#include "liveness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpumem::sim {
namespace {

// Reads /proc/<pid>/stat; returns false when it cannot. `state` is the one-letter process state.
bool read_stat(pid_t pid, char* state, std::uint64_t* start_time) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
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

std::uint64_t process_start_time(pid_t pid) {
  char state = 0;
  std::uint64_t start = 0;
  return read_stat(pid, &state, &start) ? start : 0;
}

bool process_exists(pid_t pid) {
  return !(::kill(pid, 0) != 0 && errno == ESRCH);
}

bool process_alive(pid_t pid, std::uint64_t start_time) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  std::uint64_t start = 0;
  if (!read_stat(pid, &state, &start)) return errno == EACCES;  // hidden /proc: trust kill()
  if (state == 'Z' || state == 'X') return false;
  return start_time == 0 || start == start_time;
}

}  // namespace gpumem::sim
