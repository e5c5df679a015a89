// `gpumem serve` as a child process: started with arguments, its port read from the line it
// prints, stopped with a signal.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpumem::testing {

class ExporterProcess {
 public:
  explicit ExporterProcess(std::vector<std::string> arguments) {
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe");
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      std::vector<char*> argv;
      static std::string program = GPUMEM_SERVE_EXECUTABLE;
      argv.push_back(program.data());
      static std::string serve = "serve";
      argv.push_back(serve.data());
      for (auto& a : arguments) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~ExporterProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
    ::close(err_);
  }

  // The port from "listening on http://HOST:PORT/metrics"; -1 when it exits first.
  int port() {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      std::size_t at = stdout_.find("listening on http://");
      std::size_t end = stdout_.find("/metrics", at == std::string::npos ? 0 : at);
      if (at != std::string::npos && end != std::string::npos) {
        std::size_t colon = stdout_.rfind(':', end);
        return std::stoi(stdout_.substr(colon + 1, end - colon - 1));
      }
      if (!pump(100)) return -1;
    }
    return -1;
  }

  // Signals the process and returns its exit status (-1 when it did not exit in time).
  int stop(int signal = SIGTERM) {
    ::kill(pid_, signal);
    return wait();
  }
  int wait() {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        while (pump(0)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      pump(50);
    }
    return -1;
  }
  pid_t pid() const { return pid_; }
  const std::string& out() const { return stdout_; }
  const std::string& err() const { return stderr_; }

 private:
  // Reads what the child wrote; false at end of its stdout.
  bool pump(int timeout_ms) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) <= 0) return true;
    bool open = true;
    char chunk[4096];
    if (fds[0].revents != 0) {
      ssize_t got = ::read(out_, chunk, sizeof chunk);
      if (got > 0) stdout_.append(chunk, static_cast<std::size_t>(got));
      open = got > 0;
    }
    if (fds[1].revents != 0) {
      ssize_t got = ::read(err_, chunk, sizeof chunk);
      if (got > 0) stderr_.append(chunk, static_cast<std::size_t>(got));
    }
    return open;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string stdout_;
  std::string stderr_;
};

}  // namespace gpumem::testing
