#include "gpumem/internal/run_timeline.hpp"

#include <algorithm>

namespace gpumem::run {

StepCoalescer::StepCoalescer(std::size_t max_steps, std::int64_t bucket_ns)
    : max_steps_(std::max<std::size_t>(max_steps, 16)),
      bucket_ns_(std::max<std::int64_t>(bucket_ns, 0)) {
  closed_.reserve(std::min<std::size_t>(max_steps_, 4096));
}

void StepCoalescer::add(std::int64_t time_ns, std::int64_t level) {
  latest_ns_ = std::max({latest_ns_, time_ns, std::int64_t{0}});
  const Step step{latest_ns_, level};
  if (bucket_ns_ == 0) {
    closed_.push_back(step);
    if (closed_.size() > max_steps_) coarsen();
    return;
  }
  add_coalesced(step);
  if (closed_.size() > max_steps_) coarsen();
}

void StepCoalescer::add_coalesced(const Step& step) {
  const std::int64_t index = step.time_ns / bucket_ns_;
  if (index != open_.index) {
    close_bucket();
    open_ = Bucket{index, step, step, step};
    return;
  }
  // The first time the bucket reached its lowest and its highest level: where the step starts.
  if (step.level < open_.low.level) open_.low = step;
  if (step.level > open_.high.level) open_.high = step;
  open_.last = step;
}

// The bucket's lowest, highest and last level, in time order (the last one last), each once.
void StepCoalescer::emit(const Bucket& bucket, std::vector<Step>& out) const {
  Step points[3] = {bucket.low, bucket.high, bucket.last};
  std::stable_sort(std::begin(points), std::end(points),
                   [](const Step& a, const Step& b) { return a.time_ns < b.time_ns; });
  for (const Step& point : points) {
    if (!out.empty() && out.back() == point) continue;
    out.push_back(point);
  }
}

void StepCoalescer::close_bucket() {
  if (open_.index < 0) return;
  emit(open_, closed_);
  open_.index = -1;
}

std::size_t StepCoalescer::open_count() const {
  if (open_.index < 0) return 0;
  std::vector<Step> points;
  emit(open_, points);
  return points.size();
}

// Doubles the bucket width (or picks a first one) until the steps fill at most half the bound,
// re-coalescing what was kept: a coarser bucket's extremes are among its finer buckets' extremes.
void StepCoalescer::coarsen() {
  std::vector<Step> kept = steps();
  const std::int64_t span = std::max<std::int64_t>(kept.back().time_ns - kept.front().time_ns, 1);
  if (bucket_ns_ == 0) {
    bucket_ns_ = 1;
    while (3 * (span / bucket_ns_ + 1) > static_cast<std::int64_t>(max_steps_ / 2)) bucket_ns_ *= 2;
  } else {
    bucket_ns_ *= 2;
  }
  for (;;) {
    closed_.clear();
    open_.index = -1;
    for (const Step& step : kept) add_coalesced(step);
    if (closed_.size() <= max_steps_ / 2) return;
    bucket_ns_ *= 2;
  }
}

std::vector<Step> StepCoalescer::steps() const {
  std::vector<Step> out = closed_;
  if (open_.index >= 0) emit(open_, out);
  return out;
}

}  // namespace gpumem::run
