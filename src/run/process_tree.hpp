// Which processes belong to the measured command: its root and every descendant, including
// children of forks and orphans that were reparented to gpumem (a child subreaper).
#pragma once

#include <unordered_map>
#include <unordered_set>

namespace gpumem::run {

class ProcessTree {
 public:
  // `root` is the command; `adopter` is the process orphans are reparented to (gpumem itself).
  ProcessTree(int root, int adopter) : root_(root), adopter_(adopter) {}

  // Walks the parent chain through /proc; answers are remembered, so a member stays one after
  // its parent exits. Only processes that show on a GPU are asked about, which keeps this cheap.
  bool contains(int pid);

 private:
  int root_;
  int adopter_;
  std::unordered_set<int> members_;
  std::unordered_set<int> strangers_;
};

// The parent of `pid`, or -1 when it cannot be read (gone, another namespace).
int parent_of(int pid);

}  // namespace gpumem::run
