#include "process_tree.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpumem::cli {

int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  // The command name may hold spaces and parentheses: fields resume after the last ')'.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 1));
  char state = 0;
  int parent = -1;
  fields >> state >> parent;
  return fields ? parent : -1;
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

}  // namespace gpumem::cli
