#include "gpumem/internal/pid_namespace.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace gpumem::procfs {

std::uint64_t pid_namespace(const std::filesystem::path& proc, const std::string& pid) {
  struct stat info {};
  const std::string path = (proc / pid / "ns" / "pid").string();
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.st_ino);
}

std::vector<std::uint32_t> namespace_pids(const std::filesystem::path& proc,
                                          const std::string& pid) {
  std::vector<std::uint32_t> pids;
  std::ifstream status(proc / pid / "status");
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    for (std::uint32_t next = 0; fields >> next;) pids.push_back(next);
    break;
  }
  return pids;
}

bool in_initial_pid_namespace() {
  const std::uint64_t own = pid_namespace("/proc", "self");
  return own == 0 || own == kInitialPidNamespace;
}

}  // namespace gpumem::procfs
