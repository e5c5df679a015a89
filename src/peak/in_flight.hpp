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

#include <cstdint>
#include <optional>

namespace gpumem::peak::in_flight {

void enter() noexcept;  // at a traced call's ENTER
// At its EXIT: whether a call of this thread was in flight (false for an EXIT whose ENTER was
// missed, or forgotten by reset()).
bool leave() noexcept;
// Call before and after an NVML reading: nullopt when another thread is in a traced call, else
// the sum of the other threads' generations. The reading matches the level only if both calls
// return the same value (no call of another thread overlapped it). The calling thread's own
// call, if any, is where its resource callback fired: what it charged so far (a context, a
// module) is what reconciliation is for.
std::optional<std::uint64_t> quiet_generation() noexcept;
// Forgets calls whose ENTER or EXIT was missed (a subscription taken or dropped mid-call).
void reset() noexcept;

}  // namespace gpumem::peak::in_flight
