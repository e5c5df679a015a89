// The labels of the processes a collection exports (command name, container identity), kept
// between collections so that a collection reads /proc only for what changed: a process seen for
// the first time, and each known one again once its labels are `max_age` old (a process may
// rename itself or move to another cgroup). A process absent from a collection is forgotten at
// its end. So a collection costs reads for new processes plus about n·interval/max_age, not 3n.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "container_identity.hpp"

namespace gpumem::serve {

struct ProcessLabels {
  std::string name;  // the command name, empty where it cannot be read
  ContainerIdentity container;
};

class ProcessLabelCache {
 public:
  ProcessLabelCache(const ContainerDirectory& directory, std::chrono::nanoseconds max_age)
      : directory_(directory), max_age_ns_(max_age.count()) {}

  // The labels of `pid` at a collection that began at `now_ns` (steady clock); read from /proc
  // when unknown or older than max_age. Valid until the next call.
  const ProcessLabels& labels(unsigned pid, std::int64_t now_ns);
  // Ends a collection: forgets the processes it did not ask about.
  void end_collection();
  std::size_t size() const noexcept { return known_.size(); }
  std::uint64_t reads() const noexcept { return reads_; }  // processes read from /proc so far

 private:
  struct Known {
    ProcessLabels labels;
    std::int64_t read_ns = 0;
    std::uint64_t collection = 0;  // the last one that asked
  };
  const ContainerDirectory& directory_;
  std::int64_t max_age_ns_;
  std::unordered_map<unsigned, Known> known_;
  std::uint64_t collection_ = 1;
  std::uint64_t reads_ = 0;
};

}  // namespace gpumem::serve
