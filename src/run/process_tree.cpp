#include "run/process_tree.hpp"

#include <string>
#include <vector>

#include "gpumem/internal/procfs.hpp"

namespace gpumem::run {

int parent_of(int pid) {
  return procfs::parent_pid("/proc", std::to_string(pid)).value_or(-1);
}

bool ProcessTree::contains(int pid) {
  if (pid == root_ || members_.count(pid) != 0) return true;
  if (strangers_.count(pid) != 0) return false;
  std::vector<int> chain;
  bool member = false;
  for (int current = pid; current > 1 && chain.size() < 4096;) {
    chain.push_back(current);
    if (current == root_ || current == adopter_ || members_.count(current) != 0) {
      member = true;
      break;
    }
    if (strangers_.count(current) != 0) break;
    current = parent_of(current);
  }
  // gpumem itself is the adopter, never a member.
  for (int link : chain) {
    if (link == adopter_) continue;
    (member ? members_ : strangers_).insert(link);
  }
  return member;
}

}  // namespace gpumem::run
