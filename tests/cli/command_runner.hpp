// Runs the built `gpumem` (and the simulator's tool) as a user would, capturing what it prints.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace gpumem::testing {

struct CommandResult {
  int exit_code = -1;  // the status, or 128 + signal
  std::string out;
  std::string err;
};

std::string gpumem_binary();
std::string sim_tool();

// Runs to completion (killed after `timeout`), in the calling process's environment.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::seconds timeout = std::chrono::seconds(60));

// `gpumem-sim show`'s JSON: the simulated devices' own figures.
// @throws std::runtime_error naming the status, time and error of a show that failed or was
// killed (run_command's minute), rather than handing back text that is not JSON.
std::string sim_show();

// A command left running in the background, in its own process group.
class BackgroundCommand {
 public:
  explicit BackgroundCommand(const std::vector<std::string>& argv);
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;
  ~BackgroundCommand();
  pid_t pid() const { return pid_; }
  // Whether it has not exited yet (it is not reaped: wait() still returns its status).
  bool running() const;
  // Waits until its stdout holds `text`; false after `timeout`.
  bool wait_for_output(const std::string& text,
                       std::chrono::seconds timeout = std::chrono::seconds(30)) const;
  CommandResult wait(std::chrono::seconds timeout = std::chrono::seconds(60));

 private:
  pid_t pid_ = -1;
  std::string out_path_;
  std::string err_path_;
};

// Whether `program` is on the PATH.
bool have(const std::string& program);

std::string read_file(const std::string& path);
// A fresh empty folder for a test's files.
std::string temporary_folder();

}  // namespace gpumem::testing
