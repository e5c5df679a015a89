#include "exit_watch.hpp"

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "liveness.hpp"

namespace gpumem::sim {
namespace {

int pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

ExitWatch::~ExitWatch() {
  for (const auto& [pid, watched] : watched_) ::close(watched.pidfd);
  if (epoll_ >= 0) ::close(epoll_);
}

bool ExitWatch::usable() {
  if (!tried_) {
    tried_ = true;
    if (!driver_pids_are_own()) return false;
    const int self = pidfd_open(::getpid());
    if (self < 0) return false;
    ::close(self);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  }
  return epoll_ >= 0;
}

ExitWatch::Watch ExitWatch::watch(Process process) {
  const int pidfd = pidfd_open(process.pid);
  if (pidfd < 0) return errno == ESRCH ? Watch::gone : Watch::unwatched;
  // The pid may have been reused before the pidfd was opened: the pidfd then names the new
  // process, and the one the slot belongs to is gone.
  if (!process_alive(process.pid, process.start_time)) {
    ::close(pidfd);
    return Watch::gone;
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = static_cast<std::uint32_t>(process.pid);
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, pidfd, &event) != 0) {
    ::close(pidfd);
    return Watch::unwatched;
  }
  try {
    watched_[process.pid] = {pidfd, process.start_time};
  } catch (...) {
    ::close(pidfd);
    return Watch::unwatched;
  }
  return Watch::watched;
}

void ExitWatch::exited(std::vector<Process>& out) {
  epoll_event events[64];
  int ready;
  while ((ready = ::epoll_wait(epoll_, events, 64, 0)) > 0) {
    for (int i = 0; i < ready; ++i) {
      const auto pid = static_cast<pid_t>(events[i].data.u64);
      const auto found = watched_.find(pid);
      if (found == watched_.end()) continue;
      out.push_back({pid, found->second.start_time});
      ::close(found->second.pidfd);  // leaves the epoll set with it
      watched_.erase(found);
    }
    if (ready < 64) break;
  }
}

void ExitWatch::reset() noexcept {
  for (const auto& [pid, watched] : watched_) ::close(watched.pidfd);
  watched_.clear();
  if (epoll_ >= 0) ::close(epoll_);
  epoll_ = -1;
  tried_ = false;
}

}  // namespace gpumem::sim
