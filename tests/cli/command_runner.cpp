#include "command_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace gpumem::testing {
namespace {

std::string unique_path(const std::string& stem) {
  static std::atomic<int> sequence{0};
  return (std::filesystem::temp_directory_path() /
          ("gpumem-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(sequence++) +
           stem))
      .string();
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err,
            bool own_group) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  }
  pid_t pid = -1;
  const int failed = ::posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

int wait_status(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

std::string gpumem_binary() {
  return GPUMEM_CLI_PATH;
}
std::string sim_tool() {
  return std::string(GPUMEM_SIM_DIR) + "/gpumem-sim";
}

bool have(const std::string& program) {
  return run_command({"sh", "-c", "command -v '" + program + "' >/dev/null"}).exit_code == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// mkdtemp, not a pid-based name: a folder left by an earlier run whose test had the same pid
// would otherwise hand its files to this one.
std::string temporary_folder() {
  struct Folders {
    std::vector<std::string> made;
    ~Folders() {
      std::error_code ignored;
      for (const std::string& folder : made) std::filesystem::remove_all(folder, ignored);
    }
  };
  static Folders folders;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "gpumem-cli-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create " + pattern);
  folders.made.push_back(pattern);
  return pattern;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  const std::string out = unique_path(".out"), err = unique_path(".err");
  const pid_t pid = spawn(argv, out, err, false);
  CommandResult result;
  result.exit_code = wait_status(pid, timeout);
  result.out = read_file(out);
  result.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return result;
}

std::string sim_show() {
  const auto started = std::chrono::steady_clock::now();
  CommandResult show = run_command({sim_tool(), "show"});
  if (show.exit_code != 0 || show.out.empty()) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    throw std::runtime_error("gpumem-sim show exited with " + std::to_string(show.exit_code) +
                             " after " + std::to_string(took.count()) + " ms: " + show.err);
  }
  return std::move(show.out);
}

BackgroundCommand::BackgroundCommand(const std::vector<std::string>& argv)
    : out_path_(unique_path(".out")), err_path_(unique_path(".err")) {
  pid_ = spawn(argv, out_path_, err_path_, true);
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove(out_path_);
  std::filesystem::remove(err_path_);
}

bool BackgroundCommand::running() const {
  siginfo_t info{};
  if (pid_ <= 0) return false;
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;
  return info.si_pid == 0;
}

bool BackgroundCommand::wait_for_output(const std::string& text,
                                        std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(out_path_).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

CommandResult BackgroundCommand::wait(std::chrono::seconds timeout) {
  CommandResult result;
  result.exit_code = wait_status(pid_, timeout);
  pid_ = -1;
  result.out = read_file(out_path_);
  result.err = read_file(err_path_);
  return result;
}

}  // namespace gpumem::testing
