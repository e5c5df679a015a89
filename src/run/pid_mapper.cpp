#include "run/pid_mapper.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdlib>

#include "gpumem/internal/procfs.hpp"
#include "gpumem/internal/run_counters.hpp"

namespace gpumem::run {
namespace {

bool pid_exists(int pid) {
  return pid > 0 && !(::kill(pid, 0) != 0 && errno == ESRCH);
}

}  // namespace

PidMapper::PidMapper(int root, int adopter)
    : tree_(root, adopter), own_namespace_(run::own_pid_namespace()) {
  if (!procfs::in_initial_pid_namespace()) {
    foreign_ = true;
    foreign_reason_ =
        "gpumem runs in a pid namespace of its own (a container without the host's): NVML's pids "
        "are the host's";
  }
}

void PidMapper::note_baseline(const std::vector<ProcessMemory>& listed) {
  for (const ProcessMemory& process : listed) baseline_.insert(process.pid);
}

// NVML lists only processes that hold memory on a GPU; one that is absent from this /proc at two
// readings in a row lives in another pid namespace (a process that exits leaves the list first).
void PidMapper::note_absent(const std::vector<ProcessMemory>& listed) {
  std::unordered_map<unsigned, int> streak;
  for (const ProcessMemory& process : listed) {
    if (baseline_.count(process.pid) != 0 || pid_exists(static_cast<int>(process.pid))) continue;
    const auto previous = absent_streak_.find(process.pid);
    const int count = (previous == absent_streak_.end() ? 0 : previous->second) + 1;
    streak[process.pid] = count;
    if (count >= 2 && !foreign_) {
      foreign_ = true;
      foreign_reason_ = "NVML lists pids that do not exist here (" + std::to_string(process.pid) +
                        "): they are another pid namespace's";
    }
  }
  absent_streak_ = std::move(streak);
}

void PidMapper::observe(const std::vector<ProcessMemory>& listed,
                        const std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash>& held) {
  if (!foreign_) note_absent(listed);
  if (!foreign_) return;
  for (const auto& [key, reading] : held) {
    // Only a reading no call overlapped, of a process holding memory here: it is listed.
    if (!reading.quiet || reading.bytes <= 0) continue;
    if (by_key_.count(key) != 0) continue;
    std::unordered_set<unsigned> possible;
    for (const ProcessMemory& process : listed) {
      if (baseline_.count(process.pid) != 0 || by_nvml_pid_.count(process.pid) != 0) continue;
      if (!process.used_bytes || static_cast<std::int64_t>(*process.used_bytes) < reading.bytes)
        continue;
      possible.insert(process.pid);
    }
    Candidates& candidates = candidates_[key];
    if (candidates.streak > 0 || !candidates.pids.empty()) {
      std::erase_if(candidates.pids, [&](unsigned pid) { return possible.count(pid) == 0; });
    } else {
      candidates.pids = possible;
    }
    if (candidates.pids.empty()) candidates.pids = std::move(possible);  // a reading was off
    if (candidates.pids.size() != 1) {
      candidates.streak = 0;
      continue;
    }
    if (++candidates.streak < 2) continue;
    const unsigned pid = *candidates.pids.begin();
    by_nvml_pid_[pid] = key;
    by_key_[key] = pid;
    candidates_.erase(key);
  }
}

int PidMapper::resolve_local(const ProcessKey& key) {
  if (key.pid_namespace == own_namespace_ || key.pid_namespace == run::kUnknownNamespace)
    return key.pid;
  const procfs::OwnName name{key.pid_namespace, static_cast<std::uint32_t>(key.pid)};
  if (const auto known = local_pids_.find(key); known != local_pids_.end()) {
    if (procfs::own_name("/proc", std::to_string(known->second)) == name) return known->second;
    local_pids_.erase(known);
  }
  // Only for a process of a nested namespace not seen yet: one pass over /proc.
  const int found = procfs::process_named("/proc", name).value_or(0);
  if (found != 0) local_pids_[key] = found;
  return found;
}

std::optional<Member> PidMapper::member_here(unsigned nvml_pid) {
  if (const auto known = known_.find(nvml_pid); known != known_.end()) return known->second;
  if (!tree_.contains(static_cast<int>(nvml_pid))) return std::nullopt;
  const std::string name = std::to_string(nvml_pid);
  const std::optional<std::uint64_t> ns = procfs::pid_namespace("/proc", name);
  Member member{{static_cast<std::int32_t>(nvml_pid), own_namespace_}, static_cast<int>(nvml_pid)};
  if (ns && *ns != own_namespace_) {
    // A nested namespace: the process names itself by its pid there, NSpid's last.
    const auto pids = procfs::namespace_pids("/proc", name);
    member.key = {pids ? static_cast<std::int32_t>(pids->back()) : -1, *ns};
    local_pids_[member.key] = member.local_pid;
    nested_seen_ = true;
  }
  known_[nvml_pid] = member;
  return member;
}

std::optional<Member> PidMapper::member(unsigned nvml_pid) {
  if (!foreign_) return member_here(nvml_pid);
  const auto found = by_nvml_pid_.find(nvml_pid);
  if (found == by_nvml_pid_.end()) return std::nullopt;
  return Member{found->second, resolve_local(found->second)};
}

bool PidMapper::maybe_member(unsigned nvml_pid) const {
  return foreign_ && baseline_.count(nvml_pid) == 0 && by_nvml_pid_.count(nvml_pid) == 0;
}

bool PidMapper::alive(const ProcessKey& key) {
  if (key.pid_namespace == own_namespace_ || key.pid_namespace == run::kUnknownNamespace)
    return pid_exists(key.pid);
  return resolve_local(key) != 0;
}

}  // namespace gpumem::run
