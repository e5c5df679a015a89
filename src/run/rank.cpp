#include "gpumem/internal/run_rank.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "gpumem/internal/procfs.hpp"

extern char** environ;

namespace gpumem::run {
namespace {

constexpr std::array<const char*, 5> kRankVariables = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                       "PMI_RANK", "SLURM_PROCID"};
constexpr std::array<const char*, 4> kLocalVariables = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                        "MPI_LOCALRANKID", "SLURM_LOCALID"};

// An environment larger than this is read no further (Linux caps a process's arguments and
// environment together at a quarter of its stack limit, 2 MiB by default).
constexpr std::size_t kMaxEnvironment = 16u << 20;

std::optional<int> decimal(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

// Calls `visit(name, value)` for each NAME=VALUE entry of a NUL-separated block.
template <typename Visit>
void for_each_entry(std::string_view block, Visit visit) {
  while (!block.empty()) {
    const std::size_t end = block.find('\0');
    const std::string_view entry = block.substr(0, end);
    block = end == std::string_view::npos ? std::string_view() : block.substr(end + 1);
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    visit(entry.substr(0, equals), entry.substr(equals + 1));
  }
}

template <std::size_t N>
void pick(const std::array<const char*, N>& names,
          const std::array<std::optional<std::string_view>, N>& values, std::optional<int>& out,
          std::string& variable) {
  for (std::size_t i = 0; i < N; ++i) {
    if (!values[i]) continue;
    if (const std::optional<int> number = decimal(*values[i])) {
      out = number;
      variable = names[i];
      return;
    }
  }
}

template <std::size_t N>
void remember(const std::array<const char*, N>& names,
              std::array<std::optional<std::string_view>, N>& values, std::string_view name,
              std::string_view value) {
  for (std::size_t i = 0; i < N; ++i) {
    if (!values[i] && name == names[i]) values[i] = value;
  }
}

template <std::size_t N>
std::string listed(const std::array<const char*, N>& names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::string rank_variables() {
  return listed(kRankVariables);
}
std::string local_rank_variables() {
  return listed(kLocalVariables);
}

RankInfo rank_from_environment_block(std::string_view block) {
  std::array<std::optional<std::string_view>, kRankVariables.size()> ranks;
  std::array<std::optional<std::string_view>, kLocalVariables.size()> locals;
  for_each_entry(block, [&](std::string_view name, std::string_view value) {
    remember(kRankVariables, ranks, name, value);
    remember(kLocalVariables, locals, name, value);
  });
  RankInfo info;
  pick(kRankVariables, ranks, info.rank, info.rank_variable);
  pick(kLocalVariables, locals, info.local_rank, info.local_variable);
  return info;
}

RankInfo process_rank(int pid) {
  const std::optional<std::string> block =
      procfs::environment("/proc", std::to_string(pid), kMaxEnvironment);
  return block ? rank_from_environment_block(*block) : RankInfo{};
}

RankInfo own_rank() {
  std::string block;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    block += *entry;
    block += '\0';
  }
  return rank_from_environment_block(block);
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace gpumem::run
