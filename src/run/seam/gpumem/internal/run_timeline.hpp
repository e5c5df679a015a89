// A `gpumem run`'s timeline: the rows the monitor records (each sample's per-process, tree and
// device figures, the exact level at each event, the contexts it estimated) and the same as step
// functions, combined into the footprint the run's peak is of (the plot, the attribution
// document's timeline).
//
// A seam (src/run implements it): the engine records the timeline, the gpumem command draws it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#pragma GCC visibility push(default)

namespace gpumem::run {

// What a timeline row is of: one process's sampled usage, the tree's, the exact level at an
// event, the device's used memory, or what the exactly counted processes held beyond their
// events at a sample (their contexts: exact + context is their footprint).
enum class Series { process, tree, exact, device, context };
const char* to_string(Series series);

struct TimelineRow {
  double time_s = 0;
  int device = 0;  // CUDA ordinal
  Series series = Series::device;
  unsigned pid = 0;  // for Series::process
  std::int64_t bytes = 0;
};

// A level from `time_ns` (since the command started) until the next step.
struct Step {
  std::int64_t time_ns = 0;
  std::int64_t level = 0;
  friend bool operator==(const Step&, const Step&) = default;
};

// A step function's level at `time_ns`: the last step at or before it, else the first (what a
// context estimate says before the first sample that read it). `steps` in time order.
std::int64_t level_at(const std::vector<Step>& steps, std::int64_t time_ns);

// The exactly counted processes' footprint: their events' level plus their contexts, at every
// time either changes, in time order.
std::vector<Step> footprint_steps(std::vector<Step> exact, std::vector<Step> contexts);

// A memory level over time, kept as steps (the level holds from one step to the next) in bounded
// memory: every step while they fit, then, per time bucket, the lowest and the highest level
// and the level the bucket ends on, each at its own time. Buckets double in width whenever the
// steps outgrow the bound, so a run of any length fits, and no spike is ever flattened: every
// bucket's maximum is kept at its exact height.
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

// The timeline's rows of one series, per device ordinal, as steps in time order.
std::map<int, std::vector<Step>> series_steps(const std::vector<TimelineRow>& timeline,
                                              Series series);

}  // namespace gpumem::run

#pragma GCC visibility pop
