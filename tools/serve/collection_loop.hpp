// Collections run on a thread of their own, so that a driver call that hangs delays readings,
// never scrapes: a scrape answers from the last complete collection, and says how old it is.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "exposition.hpp"

namespace gpumem::serve {

class CollectionLoop {
 public:
  using Clock = std::chrono::steady_clock;

  struct Latest {
    std::shared_ptr<const Snapshot> snapshot;  // nullptr until the first collection ends
    std::uint64_t collections = 0;
    double age_seconds = 0;  // since the last collection ended (since the start while none has)
    double duration_seconds = 0;
  };

  // Calls `collect` at once and then every `period` (from one start to the next; a slow one is
  // followed at once by the next). `collect` runs on the loop's thread only.
  CollectionLoop(std::function<Snapshot()> collect, std::chrono::nanoseconds period);
  // Stops the loop; a collection stuck in the driver is abandoned after a grace period.
  ~CollectionLoop();
  CollectionLoop(const CollectionLoop&) = delete;
  CollectionLoop& operator=(const CollectionLoop&) = delete;

  Latest latest() const;
  // Waits up to `timeout` for the first collection; whether it ended.
  bool wait_for_first(std::chrono::nanoseconds timeout) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace gpumem::serve
