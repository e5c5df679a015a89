// The engine of `gpumem run` (gpumem/internal/run_engine.hpp).
#include "gpumem/internal/run_engine.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "gpumem/internal/environment.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "run/attribution_folder.hpp"
#include "run/judge.hpp"
#include "run/monitor.hpp"

namespace gpumem::run {

std::string temporary_folder() {
  const char* folder = support::env_value("TMPDIR");
  return folder != nullptr && *folder != '\0' ? folder : "/tmp";
}

namespace {

// Removes the counters files that runs killed before they could remove their own (SIGKILL, a
// power cut) left: named gpumem-run-PID-nsNS-*, ours (same user), of our pid namespace (a
// folder shared between containers holds other namespaces' files, whose PID says nothing here)
// and PID no longer runs. Files named before namespaces were (gpumem-run-PID-*) count as ours.
void remove_stale_counters_files(const std::string& folder) {
  const std::uint64_t own_namespace = run::own_pid_namespace();
  DIR* directory = ::opendir(folder.c_str());
  if (directory == nullptr) return;
  constexpr std::string_view prefix = "gpumem-run-";
  while (const dirent* entry = ::readdir(directory)) {
    const std::string_view name = entry->d_name;
    if (name.substr(0, prefix.size()) != prefix) continue;
    const std::string rest(name.substr(prefix.size()));
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-') continue;
    if (std::strncmp(end + 1, "ns", 2) == 0) {
      char* after = nullptr;
      const unsigned long long pid_namespace = std::strtoull(end + 3, &after, 10);
      if (after == end + 3 || *after != '-' || pid_namespace != own_namespace) continue;
    }
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    const std::string path = folder + "/" + std::string(name);
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::getuid())
      continue;
    ::unlink(path.c_str());
  }
  ::closedir(directory);
}

std::vector<std::string> environment_for(char* const* from, const std::string& inject,
                                         const std::string& counters,
                                         const std::string& attribution_dir) {
  std::vector<std::string> environment;
  const std::string dir_variable = std::string(kAttributionDirVariable) + "=";
  for (char* const* entry = from; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (!inject.empty() && (text.rfind("CUDA_INJECTION64_PATH=", 0) == 0 ||
                            text.rfind(std::string(run::kCountersVariable) + "=", 0) == 0)) {
      continue;
    }
    if (text.rfind(dir_variable, 0) == 0) continue;  // only this run's folder
    environment.push_back(text);
  }
  if (!inject.empty()) {
    environment.push_back("CUDA_INJECTION64_PATH=" + inject);
    environment.push_back(std::string(run::kCountersVariable) + "=" + counters);
    if (!attribution_dir.empty()) environment.push_back(dir_variable + attribution_dir);
  }
  return environment;
}

}  // namespace

// The shared counters: a sealed memory file, closed when the run ends. (Not in the anonymous
// namespace: the engine's state holds one.)
class CountersFile {
 public:
  bool create(std::string* error) {
    // Files that runs of gpumem before the memory file (killed before they removed them) left.
    remove_stale_counters_files(temporary_folder());
    counters_ = run::create_run_counters(&path_, &fd_, error);
    return counters_ != nullptr;
  }
  ~CountersFile() {
    run::unmap_run_counters(counters_);
    if (fd_ >= 0) ::close(fd_);
  }
  const std::string& path() const { return path_; }
  run::RunCounters* counters() const { return counters_; }

 private:
  std::string path_;
  int fd_ = -1;
  run::RunCounters* counters_ = nullptr;
};

struct Engine::State {
  std::vector<DeviceInfo> devices;
  bool keep_timeline = false;
  std::string inject;
  CountersFile counters;
  AttributionFolder attribution;
  std::optional<RunMonitor> monitor;

  RunMonitor& ensure_monitor() {
    if (!monitor) {
      monitor.emplace(std::move(devices), inject.empty() ? nullptr : counters.counters(),
                      keep_timeline || !attribution.path().empty());
    }
    return *monitor;
  }
};

Engine::Engine(std::vector<DeviceInfo> devices, bool keep_timeline)
    : state_(std::make_unique<State>()) {
  state_->devices = std::move(devices);
  state_->keep_timeline = keep_timeline;
}

Engine::~Engine() = default;

bool Engine::count_exactly(const std::string& inject_library, std::string* why) {
  if (state_->monitor || inject_library.empty()) return false;
  if (!state_->counters.create(why)) return false;
  state_->inject = inject_library;
  return true;
}

bool Engine::exact() const {
  return !state_->inject.empty();
}

bool Engine::collect_attribution(std::string* why) {
  if (state_->monitor || !exact()) return false;
  return state_->attribution.create(why);
}

std::vector<std::string> Engine::child_environment(char* const* environment) const {
  return environment_for(environment, state_->inject, state_->counters.path(),
                         state_->attribution.path());
}

void Engine::baseline() {
  state_->ensure_monitor().baseline();
}

void Engine::start(int root, double interval_s) {
  state_->ensure_monitor().start(root, interval_s);
}

void Engine::stop() {
  state_->ensure_monitor().stop();
}

void Engine::finish(RunResult& result) const {
  const RunMonitor& monitor = state_->ensure_monitor();
  result.elapsed_s = monitor.elapsed_s();
  result.samples = monitor.samples();
  result.devices = monitor.devices();
  result.ranks = monitor.rank_peaks();
  result.unmeasured_devices = monitor.unmeasured_devices();
  result.timeline = monitor.timeline();
  result.timeline_events_lost = monitor.timeline_events_lost();
  judge_processes(exact() ? state_->counters.counters() : nullptr, monitor, result);
}

detail::attribution::Document Engine::attribution(const std::string& command,
                                                  const std::string& host,
                                                  std::vector<std::string>* warnings) const {
  return combine_attribution(state_->attribution.path(), command, host, state_->ensure_monitor(),
                             warnings);
}

}  // namespace gpumem::run
