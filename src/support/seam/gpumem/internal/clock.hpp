// The clocks gpumem reads, in one place: wall-clock time for what is shown to people and other
// programs, the monotonic clock for everything timed, and the steady cadence of every periodic
// loop (the sampler, the exporter's collection). Header-only, so that the tools built on the
// library (through the gpumem_internal target) keep the same clocks and nothing is exported.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpumem::support {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds since the Unix epoch (the system clock: may jump when the clock is set).
inline std::int64_t unix_time_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Nanoseconds of the monotonic clock (CLOCK_MONOTONIC, which is what steady_clock reads on
// Linux): comparable between processes of one machine, never set back.
inline std::int64_t monotonic_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

// Ticks at a steady rate rather than a fixed sleep after each piece of work, so the work's own
// time does not slow the rate. After a stall (work slower than the interval, a suspended
// machine) the next tick is now: the loop goes on at once, and never runs a burst of ticks to
// catch up. Not thread-safe: one loop owns one cadence.
class Cadence {
 public:
  explicit Cadence(SteadyClock::time_point first = SteadyClock::now()) noexcept : next_(first) {}

  // The tick `interval` after the previous one, or `now` where that is already past.
  SteadyClock::time_point advance(SteadyClock::duration interval,
                                  SteadyClock::time_point now = SteadyClock::now()) noexcept {
    next_ += interval;
    if (next_ < now) next_ = now;
    return next_;
  }
  SteadyClock::time_point next() const noexcept { return next_; }

 private:
  SteadyClock::time_point next_;
};

}  // namespace gpumem::support
