// Runs the measured command as a shell would: in gpumem's process group (so a terminal's Ctrl-C
// reaches it directly, and interactive programs keep the terminal), with the signals sent to
// gpumem itself forwarded to it, and its status reported the shell's way.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

#include "gpumem/internal/run_result.hpp"

namespace gpumem::cli {

using run::ChildExit;  // the child's status, or 128 + signal when a signal killed it

class ChildProcess {
 public:
  // Installs the forwarding handlers; they stay until the object is destroyed.
  ChildProcess();
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // false when the command cannot start, with the shell's status (127 not found, 126 not
  // executable) in `exit_code` and a one-line reason in `error`.
  bool start(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
             int& exit_code, std::string& error);
  int pid() const { return pid_; }
  // Waits for the command (reaping adopted orphans on the way).
  ChildExit wait();
  // After the command exited: waits up to `bound_s` for the descendants gpumem adopted (a
  // signal sent to gpumem meanwhile is passed on to them); the pids of those still running.
  std::vector<int> wait_for_descendants(double bound_s);

 private:
  int pid_ = -1;
  bool restore_pipe_ = false;
};

using run::signal_name;  // "SIGTERM" for 15

// The signals passed on to the command: every one a job's owner sends to ask something of it
// (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, ..., the real-time signals).
sigset_t forwarded_set();

}  // namespace gpumem::cli
