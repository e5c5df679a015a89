// A memory level over time, kept as steps (the level holds from one step to the next) in bounded
// memory: every step while they fit, then, per time bucket, the lowest and the highest level
// and the level the bucket ends on, each at its own time. Buckets double in width whenever the
// steps outgrow the bound, so a run of any length fits, and no spike is ever flattened: every
// bucket's maximum is kept at its exact height.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpumem::cli {

struct Step {
  std::int64_t time_ns = 0;
  std::int64_t level = 0;
  friend bool operator==(const Step&, const Step&) = default;
};

class StepCoalescer {
 public:
  // At most `max_steps` (at least 16) steps are kept, plus the 3 of the bucket being filled.
  // `bucket_ns` > 0 starts coalesced at that width (buckets start at time 0); 0 keeps every
  // step until they no longer fit.
  explicit StepCoalescer(std::size_t max_steps = 16384, std::int64_t bucket_ns = 0);

  // A new level at `time_ns`. Times should not go back; one that does (events of different
  // processes read their clocks a few nanoseconds apart) is taken as the latest time seen.
  void add(std::int64_t time_ns, std::int64_t level);

  // The steps in time order.
  std::vector<Step> steps() const;
  // The current bucket width, 0 while every step is kept.
  std::int64_t bucket_ns() const { return bucket_ns_; }
  std::size_t size() const { return closed_.size() + open_count(); }

 private:
  struct Bucket {
    std::int64_t index = -1;  // -1: none open
    Step low, high, last;
  };
  void add_coalesced(const Step& step);
  void close_bucket();
  std::size_t open_count() const;
  void emit(const Bucket& bucket, std::vector<Step>& out) const;
  void coarsen();

  std::size_t max_steps_;
  std::int64_t bucket_ns_;
  std::int64_t latest_ns_ = 0;
  std::vector<Step> closed_;
  Bucket open_;
};

}  // namespace gpumem::cli
