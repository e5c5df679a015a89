// Which processes have exited, as the kernel tells it: one pidfd per watched process, all in one
// epoll set. Asking costs one system call whatever the number of processes watched, and the
// answer grows only with those that exited since. This is how the simulated driver's memory
// figure learns of dead processes: the real driver frees a process's memory when the process
// ends (the kernel closes its device files), and its memory query walks no process.
//
// Usable only where the driver's pids are the caller's own (GPUMEM_SIM_HOST_PROC unset or naming
// the caller's namespace) and the kernel has pidfd_open (Linux 5.3); elsewhere the caller asks
// about each process as before. Not thread-safe; a fork child must reset() it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gpumem::sim {

class ExitWatch {
 public:
  struct Process {
    pid_t pid = 0;
    std::uint64_t start_time = 0;  // the kernel's, as the usage slot holds it
  };

  ExitWatch() = default;
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;
  ~ExitWatch();

  // Whether the kernel can tell here (tried once).
  bool usable();
  enum class Watch {
    watched,
    gone,       // exited already, or the pid now names another process than the one that
                // started at `start_time`
    unwatched,  // no descriptor for it: the caller asks about it the old way
  };
  Watch watch(Process process);
  bool watching(pid_t pid) const { return watched_.count(pid) != 0; }
  // Appends the watched processes that have exited since the last call, and stops watching them.
  void exited(std::vector<Process>& out);
  // Forgets everything (a fork child's copies of its parent's descriptors are closed).
  void reset() noexcept;

 private:
  struct Watched {
    int pidfd = -1;
    std::uint64_t start_time = 0;
  };
  int epoll_ = -1;
  bool tried_ = false;
  std::unordered_map<pid_t, Watched> watched_;
};

}  // namespace gpumem::sim
