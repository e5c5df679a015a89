// Which threads are inside a traced driver call. The driver charges (or frees) memory in its
// own figures before the call's EXIT callback moves gpumem's level, so an NVML reading taken
// while a call is in flight does not match the level; reconciliation reads NVML only when no
// traced call was in flight anywhere in the process at any moment of the reading (footprint.cpp).
//
// Each thread's word holds its calls in flight (the low 16 bits) and how many it has left (the
// generation, above): a call that entered and left between two readings of the table changes
// the sum of the generations, so a reading it overlapped is refused even though the level came
// back to where it was (an allocation and its free, both inside the reading).
//
// Cost on the call path: each thread owns a slot (its own cache line) that only it writes, so
// entering and leaving is a load, a store and a release fence: no read-modify-write. Threads
// beyond the slots share one counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace gpumem::peak::in_flight {

namespace detail {

// A slot's word: calls in flight in the low 16 bits, calls left (the generation) above. Leaving
// adds kLeft: one call fewer in flight, the generation one higher.
inline constexpr std::uint64_t kDepthMask = 0xffff;
inline constexpr std::uint64_t kLeft = (std::uint64_t{1} << 16) - 1;

struct alignas(64) Slot {
  std::atomic<std::uint64_t> word{0};
  bool shared = false;  // the overflow slot, written by every thread beyond the table's slots
};

// The calling thread's slot once it has one (in_flight.cpp hands them out). No destructor (a
// thread_local with one misbehaves in a dlopen'ed library at exit): a slot stays with its
// thread's memory of it. Initial-exec: the library is dlopen'ed under `gpumem run`, where the
// default model would cost a __tls_get_addr call per access.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local Slot* t_slot;

bool enter_slow() noexcept;
bool leave_slow() noexcept;

}  // namespace detail

// At a traced call's ENTER: whether it is the thread's outermost traced call (a runtime call's
// driver calls are nested in it), which is all a watcher outside the thread needs to see: every
// event of a nested call comes between its outermost call's ENTER and EXIT. True for every call
// of a thread beyond the table's slots, whose depth is shared. Inline: on every traced call.
inline bool enter() noexcept {
  detail::Slot* slot = detail::t_slot;
  if (slot == nullptr || slot->shared) [[unlikely]] {
    return detail::enter_slow();
  }
  // Only this thread writes its slot: a load and a store, no read-modify-write.
  const std::uint64_t word = slot->word.load(std::memory_order_relaxed);
  slot->word.store(word + 1, std::memory_order_relaxed);
  // The driver's charge (a later store of this thread) must not become visible before this: a
  // release fence orders it before every later store (free on x86, one barrier on aarch64).
  std::atomic_thread_fence(std::memory_order_release);
  return (word & detail::kDepthMask) == 0;
}

// At its EXIT: whether it left the thread's outermost call, as enter() said of its ENTER (false
// for a nested call, and for an EXIT whose ENTER was missed or forgotten by reset(); for a thread
// beyond the slots, whether any call was in flight).
inline bool leave() noexcept {
  detail::Slot* slot = detail::t_slot;
  if (slot == nullptr || slot->shared) [[unlikely]] {
    return detail::leave_slow();
  }
  const std::uint64_t word = slot->word.load(std::memory_order_relaxed);
  if ((word & detail::kDepthMask) == 0) return false;
  slot->word.store(word + detail::kLeft, std::memory_order_release);
  return (word & detail::kDepthMask) == 1;
}

// Call before and after an NVML reading: nullopt when another thread is in a traced call, else
// the sum of the other threads' generations. The reading matches the level only if both calls
// return the same value (no call of another thread overlapped it). The calling thread's own
// call, if any, is where its resource callback fired: what it charged so far (a context, a
// module) is what reconciliation is for.
std::optional<std::uint64_t> quiet_generation() noexcept;
// Forgets calls whose ENTER or EXIT was missed (a subscription taken or dropped mid-call).
void reset() noexcept;

}  // namespace gpumem::peak::in_flight
