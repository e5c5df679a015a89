#include "child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "gpumem/internal/procfs.hpp"

namespace gpumem::cli {
namespace {

// Every signal whose default would end gpumem and that a job's owner sends to ask something of
// the job (stop, reload, dump, checkpoint): all but those the kernel raises for a fault, those
// that stop or continue (the terminal's job control reaches the child directly), and SIGCHLD.
std::vector<int> forwarded_signals() {
  std::vector<int> signals = {SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGWINCH};
  for (int signal = SIGRTMIN; signal <= SIGRTMAX; ++signal) signals.push_back(signal);
  return signals;
}

std::atomic<pid_t> g_child{0};
std::atomic<int> g_pending{0};  // a signal that came after the command exited

void forward(int signal, siginfo_t* info, void*) {
  // A terminal signals the whole foreground process group, the child included; only a signal
  // sent to gpumem alone (kill, a job scheduler) needs passing on.
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  // kill() may set errno; the code this handler interrupted (a waitpid() loop reading EINTR)
  // must see its own.
  const int saved_errno = errno;
  const pid_t child = g_child.load();
  if (child > 0) {
    ::kill(child, signal);
  } else {
    g_pending.store(signal);  // for the descendants still running, if gpumem waits for them
  }
  errno = saved_errno;
}

bool ignored(int signal) {
  struct sigaction previous {};
  ::sigaction(signal, nullptr, &previous);
  return (previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler == SIG_IGN;
}

// gpumem's own children: the command, or descendants it adopted as their subreaper.
std::vector<int> children_of_gpumem() {
  std::vector<int> children;
  const int self = static_cast<int>(::getpid());
  for (const int pid : procfs::process_ids("/proc")) {
    if (procfs::parent_pid("/proc", std::to_string(pid)) == self) children.push_back(pid);
  }
  std::sort(children.begin(), children.end());
  return children;
}

}  // namespace

sigset_t forwarded_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : forwarded_signals()) sigaddset(&set, signal);
  return set;
}

ChildProcess::ChildProcess() {
  // Orphans of the command are reparented to gpumem, so their memory still counts as the tree's.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction action {};
  action.sa_sigaction = forward;
  action.sa_flags = SA_SIGINFO;  // no SA_RESTART: waitpid returns and is retried
  sigemptyset(&action.sa_mask);
  for (int signal : forwarded_signals()) {
    // A signal ignored when gpumem started (nohup, `cmd &`) stays ignored, for the child too.
    if (!ignored(signal)) ::sigaction(signal, &action, nullptr);
  }
  // A closed stderr must not kill gpumem (and orphan the command) as it prints the summary; the
  // command gets SIGPIPE's default back unless gpumem itself was started with it ignored.
  if (!ignored(SIGPIPE)) {
    ::signal(SIGPIPE, SIG_IGN);
    restore_pipe_ = true;
  }
}

ChildProcess::~ChildProcess() {
  g_child.store(0);
  if (restore_pipe_) ::signal(SIGPIPE, SIG_DFL);
  for (int signal : forwarded_signals()) {
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
  sigset_t defaults;
  sigemptyset(&defaults);
  if (restore_pipe_) sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
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

std::vector<int> ChildProcess::wait_for_descendants(double bound_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::nanoseconds(static_cast<std::int64_t>(bound_s * 1e9));
  for (;;) {
    int status = 0;
    pid_t reaped = 0;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return {};  // every descendant has exited
    if (const int signal = g_pending.exchange(0); signal != 0) {
      for (int pid : children_of_gpumem()) ::kill(pid, signal);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    ::usleep(5000);
  }
  return children_of_gpumem();
}

}  // namespace gpumem::cli
