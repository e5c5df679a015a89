// Paired rounds for the size sweeps of issue 32: a structure's churn and its floor timed
// alternately in the same run, the ratio taken per round and its median reported, so that the
// load of a shared machine moves both sides of each ratio alike.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <utility>
#include <vector>

namespace gpumem::bench {

// Random keys as the driver hands out device addresses: aligned (512 B), spread over 2^49 bytes,
// never 0.
class AddressStream {
 public:
  std::uint64_t next() noexcept {
    state_ += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((z & ((1ull << 40) - 1)) + 1) << 9;
  }

 private:
  std::uint64_t state_ = 0x1234567;
};

struct RoundFigures {
  double subject_ns = 0;  // median per event
  double floor_ns = 0;    // median per event
  double ratio = 0;       // median of the rounds' ratios
};

// The calling thread's CPU time: a round preempted by the machine's other work is not charged
// for the time it waited.
inline double thread_cpu_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

// Runs `rounds` pairs of (floor(events), subject(events)), each timed in CPU time; per event
// figures.
template <class Floor, class Subject>
RoundFigures paired_rounds(int rounds, std::int64_t events, Floor&& floor, Subject&& subject) {
  std::vector<double> subjects, floors, ratios;
  for (int round = 0; round < rounds; ++round) {
    double start = thread_cpu_ns();
    floor(events);
    const double floor_ns = thread_cpu_ns() - start;
    start = thread_cpu_ns();
    subject(events);
    const double subject_ns = thread_cpu_ns() - start;
    floors.push_back(floor_ns / static_cast<double>(events));
    subjects.push_back(subject_ns / static_cast<double>(events));
    ratios.push_back(subject_ns / floor_ns);
  }
  auto median = [](std::vector<double>& values) {
    std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
    return values[values.size() / 2];
  };
  return {median(subjects), median(floors), median(ratios)};
}

inline void report(benchmark::State& state, const RoundFigures& figures) {
  state.counters["ns_per_event"] = figures.subject_ns;
  state.counters["floor_ns"] = figures.floor_ns;
  state.counters["ratio"] = figures.ratio;
}

// A random 64-bit value mapped onto [0, n) by a multiply (its high word), not by `%`: a `div`
// whose divisor the compiler leaves in memory (`divq mem`, as register pressure around the
// subject's code decides) is not issued ahead of older stores whose addresses wait on a cache
// miss, so a churn's misses stopped overlapping: 77-84 ns per event against 30-33 ns for the
// same floor with the divisor in a register (docs/peaks.md).
inline std::size_t below(std::uint64_t random, std::size_t n) noexcept {
  __extension__ typedef unsigned __int128 Wide;
  return static_cast<std::size_t>((static_cast<Wide>(random) * n) >> 64);
}

// The floor of a hash table's churn: for each event one random read-modify-write of a 16-byte
// slot in an array as large as the table, after the same key bookkeeping the subject does.
class RandomAccessFloor {
 public:
  explicit RandomAccessFloor(std::size_t bytes) : slots_(std::max<std::size_t>(bytes / 16, 1)) {}
  void touch(std::uint64_t key) noexcept {
    Slot& slot = slots_[below(key * 0x9E3779B97F4A7C15ull, slots_.size())];
    slot.key ^= key;
    slot.value += 1;
  }
  std::uint64_t sum() const noexcept { return slots_.front().value + slots_.back().key; }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint64_t value = 0;
  };
  std::vector<Slot> slots_;
};

// Random indices into `live` blocks (xorshift64): one sequence shared by a churn and its floor,
// so that both replace the same blocks.
class IndexPicker {
 public:
  explicit IndexPicker(std::size_t live) : live_(live) {}
  std::size_t next() noexcept {
    pick_ ^= pick_ << 13;
    pick_ ^= pick_ >> 7;
    pick_ ^= pick_ << 17;
    return below(pick_, live_);
  }

 private:
  std::uint64_t pick_ = 88172645463325252ull;
  std::size_t live_;
};

// The floor of a churn of the live blocks `keys` in a table of `bytes`: per pair of events, the
// subject's key bookkeeping (a random live key replaced by a new address), each key touched in a
// RandomAccessFloor as large as the table.
class ChurnFloor {
 public:
  ChurnFloor(std::size_t bytes, std::vector<std::uint64_t> keys, IndexPicker& picks)
      : floor_(bytes), keys_(std::move(keys)), picks_(picks) {}
  // `count` events; a value for the caller to keep from the optimiser. The loop's own state (the
  // pick sequence, the address stream) is held in locals.
  std::uint64_t operator()(std::int64_t count) noexcept {
    IndexPicker picks = picks_;
    AddressStream addresses = addresses_;
    std::uint64_t* const keys = keys_.data();
    for (std::int64_t i = 0; i < count; i += 2) {
      std::uint64_t& key = keys[picks.next()];
      floor_.touch(key);
      key = addresses.next();
      floor_.touch(key);
    }
    picks_ = picks;
    addresses_ = addresses;
    return floor_.sum();
  }

 private:
  RandomAccessFloor floor_;
  std::vector<std::uint64_t> keys_;
  AddressStream addresses_;
  IndexPicker& picks_;
};

}  // namespace gpumem::bench
