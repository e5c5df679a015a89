// Which rank of a distributed job a process is: from the variables launchers put in each
// worker's environment (torchrun, Slurm's srun, Open MPI's mpirun, PMIx and MPICH's Hydra), and
// the name of the node it runs on.
//
// A seam (src/run implements it): the engine reads the ranks of the command's processes, the
// gpumem command its own (per-node file names) and the variables' names for its messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#pragma GCC visibility push(default)

namespace gpumem::run {

struct RankInfo {
  std::optional<int> rank;        // the global rank
  std::optional<int> local_rank;  // the rank on this node
  std::string rank_variable;      // which variable gave the rank ("RANK", "SLURM_PROCID", ...)
  std::string local_variable;     // which gave the local rank

  bool known() const { return rank.has_value() || local_rank.has_value(); }
};

// The variables read, most specific launcher first: torchrun's RANK set under srun beats the
// SLURM_PROCID its workers inherit. Comma-separated, for messages.
std::string rank_variables();
std::string local_rank_variables();

// From an environment block as /proc/<pid>/environ holds it: NAME=VALUE entries separated by
// NUL bytes. Entries without '=' and values that are not plain decimal numbers are skipped; the
// first entry of a name counts (as getenv answers).
RankInfo rank_from_environment_block(std::string_view block);

// The rank of a running process, from /proc/<pid>/environ (the environment it was started
// with); unknown when the file cannot be read (gone, another user, a hardened kernel).
RankInfo process_rank(int pid);

// The rank in gpumem's own environment: under srun or mpirun each node's `gpumem run` has one.
RankInfo own_rank();

// This machine's host name (gethostname), "localhost" when it has none.
std::string host_name();

}  // namespace gpumem::run

#pragma GCC visibility pop
