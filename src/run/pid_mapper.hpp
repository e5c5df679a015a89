// Which of the pids NVML lists are the measured command's processes, across pid namespaces.
//
// NVML reports the pids the driver sees, those of the host's (initial) pid namespace. The
// processes that loaded the injection library name themselves by their pid in their own
// namespace and that namespace. Three cases:
// - gpumem in the host's namespace, the command too: NVML's pids are ours; the process tree says
//   which are the command's.
// - gpumem in the host's namespace, the command (or part of it) in a nested one (`unshare --pid`,
//   a sandbox): the tree still says which are the command's, and /proc/PID/status NSpid with
//   /proc/PID/ns/pid say how each one names itself.
// - gpumem in a pid namespace of its own (a container without the host's): NVML's pids exist
//   nowhere gpumem can look. An injected process is matched to the one NVML pid that can be it:
//   not on the GPU before the command started, listed on every device the process holds memory
//   on, holding at least what its events hold; only a match that is the sole candidate at two
//   readings is made. The other pids stay unmapped, and the report says so.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpumem/device.hpp"
#include "gpumem/internal/run_result.hpp"
#include "run/process_tree.hpp"

namespace gpumem::run {

// One of the command's processes behind an NVML pid.
struct Member {
  ProcessKey key;
  int local_pid = 0;  // its pid in gpumem's namespace (for its name), 0 when unknown
};

// What an injected process's events held on a device while NVML's list was read; `quiet` when
// no traced call of the process overlapped the reading (run_counters.hpp, `calls`): only then
// does NVML's figure for the process include exactly these bytes of its events.
struct HeldReading {
  std::int64_t bytes = 0;
  bool quiet = false;
};

class PidMapper {
 public:
  // `root` is the command, `adopter` gpumem itself (see ProcessTree).
  PidMapper(int root, int adopter);

  // The pids on the GPUs before the command started: none of them is the command's.
  void note_baseline(const std::vector<ProcessMemory>& listed);
  // One sample of one device: NVML's list, and the injected processes' held bytes around it.
  void observe(const std::vector<ProcessMemory>& listed,
               const std::unordered_map<ProcessKey, HeldReading, ProcessKeyHash>& held);
  // The command's process behind `nvml_pid`, or nullopt: not the command's, or (when NVML's pids
  // are another namespace's) not matched to one of its processes.
  std::optional<Member> member(unsigned nvml_pid);
  // Whether an NVML pid that is not a member may still be the command's: when NVML's pids are
  // another namespace's, any pid that appeared on a GPU after the command started.
  bool maybe_member(unsigned nvml_pid) const;
  // Whether observing the same list again would teach it nothing: no listed pid missing here
  // awaiting its next sighting (which would say NVML's pids are another namespace's), no process
  // awaiting its match.
  bool settled() const { return (foreign_ || absent_streak_.empty()) && candidates_.empty(); }
  // Whether the process a counters slot names still runs.
  bool alive(const ProcessKey& key);

  std::uint64_t own_namespace() const { return own_namespace_; }
  // NVML's pids are not gpumem's (it runs in a container, or NVML lists pids absent here).
  bool foreign() const { return foreign_; }
  // Why, in a sentence; empty when they are gpumem's.
  const std::string& foreign_reason() const { return foreign_reason_; }
  // Whether some pid was seen in a nested namespace and mapped through NSpid.
  bool nested_seen() const { return nested_seen_; }
  // The NVML pids matched to injected processes, when foreign.
  std::size_t matched() const { return by_nvml_pid_.size(); }

 private:
  struct Candidates {
    std::unordered_set<unsigned> pids;
    int streak = 0;  // consecutive readings with a sole candidate
  };
  std::optional<Member> member_here(unsigned nvml_pid);
  int resolve_local(const ProcessKey& key);
  void note_absent(const std::vector<ProcessMemory>& listed);

  ProcessTree tree_;
  std::uint64_t own_namespace_;
  bool foreign_ = false;
  std::string foreign_reason_;
  bool nested_seen_ = false;
  std::unordered_set<unsigned> baseline_;
  std::unordered_map<unsigned, int> absent_streak_;  // NVML pids missing from /proc
  // Same namespace: the answer per NVML pid, once asked.
  std::unordered_map<unsigned, std::optional<Member>> known_;
  // Foreign: the matches made, both ways, and the candidates of the injected processes.
  std::unordered_map<unsigned, ProcessKey> by_nvml_pid_;
  std::unordered_map<ProcessKey, unsigned, ProcessKeyHash> by_key_;
  std::unordered_map<ProcessKey, Candidates, ProcessKeyHash> candidates_;
  // Processes of nested namespaces, by how they name themselves: their pid here.
  std::unordered_map<ProcessKey, int, ProcessKeyHash> local_pids_;
};

}  // namespace gpumem::run
