// Runs the measured command as a shell would: in gpumem's process group (so a terminal's Ctrl-C
// reaches it directly, and interactive programs keep the terminal), with the signals sent to
// gpumem itself forwarded to it, and its status reported the shell's way.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace gpumem::cli {

struct ChildExit {
  int exit_code = 0;  // the child's status, or 128 + signal when a signal killed it
  int signal = 0;     // the signal that killed it, 0 when it exited
};

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

 private:
  int pid_ = -1;
};

// "SIGTERM" for 15.
std::string signal_name(int signal);

// The signals passed on to the command (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
sigset_t forwarded_set();

}  // namespace gpumem::cli
