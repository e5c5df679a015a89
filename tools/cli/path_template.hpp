// Output file names that differ per node and rank: `--json 'run-{host}-{rank}.json'`, so one
// `gpumem run` per node under srun or mpirun can share a folder.
#pragma once

#include <optional>
#include <string>

namespace gpumem::cli {

struct PathValues {
  std::string host;
  std::optional<int> rank;        // from gpumem's own environment
  std::optional<int> local_rank;  // likewise
  int pid = 0;                    // gpumem's
};

// Replaces {host}, {rank}, {local_rank} and {pid}; `{{` and `}}` stand for braces. An unknown
// placeholder, an unclosed brace, or {rank} without a rank in the environment is an error, said
// in `error` (naming the template), and nullopt is returned.
std::optional<std::string> expand_path(const std::string& pattern, const PathValues& values,
                                       std::string* error);

}  // namespace gpumem::cli
