#include "child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace gpumem::cli {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::atomic<pid_t> g_child{0};

void forward(int signal, siginfo_t* info, void*) {
  // A terminal signals the whole foreground process group, the child included; only a signal
  // sent to gpumem alone (kill, a job scheduler) needs passing on.
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  const pid_t child = g_child.load();
  if (child > 0) ::kill(child, signal);
}

}  // namespace

sigset_t forwarded_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kForwarded) sigaddset(&set, signal);
  return set;
}

std::string signal_name(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation
                                 : "signal " + std::to_string(signal);
}

ChildProcess::ChildProcess() {
  // Orphans of the command are reparented to gpumem, so their memory still counts as the tree's.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction action {};
  action.sa_sigaction = forward;
  action.sa_flags = SA_SIGINFO;  // no SA_RESTART: waitpid returns and is retried
  sigemptyset(&action.sa_mask);
  for (int signal : kForwarded) {
    struct sigaction previous {};
    ::sigaction(signal, nullptr, &previous);
    // A signal ignored when gpumem started (nohup, `cmd &`) stays ignored, for the child too.
    if (previous.sa_handler != SIG_IGN) ::sigaction(signal, &action, nullptr);
  }
}

ChildProcess::~ChildProcess() {
  g_child.store(0);
  for (int signal : kForwarded) {
    struct sigaction previous {};
    ::sigaction(signal, nullptr, &previous);
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction == forward) {
      ::signal(signal, SIG_DFL);
    }
  }
}

bool ChildProcess::start(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, int& exit_code,
                         std::string& error) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const std::string& entry : environment) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);

  // Held back until the pid is known, so a signal that arrives meanwhile is forwarded, not lost.
  const sigset_t forwarded = forwarded_set();
  sigset_t original;
  ::pthread_sigmask(SIG_BLOCK, &forwarded, &original);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &original);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int failure = ::posix_spawnp(&pid, args[0], nullptr, &attributes, args.data(), env.data());
  posix_spawnattr_destroy(&attributes);
  if (failure == 0) {
    pid_ = pid;
    g_child.store(pid);
  }
  ::pthread_sigmask(SIG_SETMASK, &original, nullptr);
  if (failure == 0) return true;

  const bool searched = argv[0].find('/') == std::string::npos;
  if (failure == ENOENT) {
    exit_code = 127;
    error = argv[0] + ": " + (searched ? "command not found" : std::strerror(failure));
  } else {
    exit_code = 126;
    error = argv[0] + ": " + std::strerror(failure);
  }
  return false;
}

ChildExit ChildProcess::wait() {
  ChildExit result;
  for (;;) {
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, 0);
    if (reaped < 0) {
      if (errno == EINTR) continue;
      result.exit_code = 1;  // ECHILD: nothing left to wait for
      break;
    }
    if (reaped != pid_) continue;  // an adopted orphan
    if (WIFSIGNALED(status)) {
      result.signal = WTERMSIG(status);
      result.exit_code = 128 + result.signal;
    } else {
      result.exit_code = WEXITSTATUS(status);
    }
    break;
  }
  g_child.store(0);
  return result;
}

}  // namespace gpumem::cli
