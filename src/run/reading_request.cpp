// The handshake by which a measured process asks `gpumem run`'s monitor for a reading of its own
// footprint at a moment it makes quiet (run_counters.hpp, docs/peaks.md "How the context is
// known"): futex words in the shared file, so that neither side polls. Every wait is bounded:
// a monitor that never answers costs the process `timeout_ns` once, never its run.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "gpumem/internal/run_counters.hpp"

namespace gpumem::run {
namespace {

// A shared (not FUTEX_PRIVATE) wait: the word lives in a mapping other processes share.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::int64_t timeout_ns) noexcept {
  if (timeout_ns <= 0) return;
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                   static_cast<long>(timeout_ns % 1'000'000'000)};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &timeout,
            nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr,
            nullptr, 0);
}

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

}  // namespace

void ring_doorbell(RunCounters& counters) noexcept {
  counters.doorbell.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(counters.doorbell);
}

void wait_for_doorbell(RunCounters& counters, std::uint32_t seen,
                       std::int64_t timeout_ns) noexcept {
  if (counters.doorbell.load(std::memory_order_acquire) != seen) return;
  futex_wait(counters.doorbell, seen, timeout_ns);
}

std::uint32_t ask_for_reading(RunCounters& counters, ProcessSlot& slot, std::uint32_t kind,
                              std::int64_t timeout_ns) noexcept {
  slot.asked_kind.store(kind, std::memory_order_relaxed);
  const std::uint32_t asked = slot.asked.fetch_add(1, std::memory_order_seq_cst) + 1;
  ring_doorbell(counters);
  const std::int64_t deadline = monotonic_ns() + timeout_ns;
  for (;;) {
    const std::uint32_t answered = slot.answered.load(std::memory_order_acquire);
    if (answered == asked) return slot.answer.load(std::memory_order_acquire);
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return 0;
    futex_wait(slot.answered, answered, left);
  }
}

void answer_reading(ProcessSlot& slot, std::uint32_t asked, std::uint32_t answer) noexcept {
  slot.answer.store(answer, std::memory_order_relaxed);
  slot.answered.store(asked, std::memory_order_release);
  futex_wake(slot.answered);
}

}  // namespace gpumem::run
