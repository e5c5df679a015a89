// Which threads are inside a traced driver call. The driver charges (or frees) memory in its
// own figures before the call's EXIT callback moves gpumem's level, so an NVML reading taken
// while a call is in flight does not match the level; reconciliation reads NVML only when no
// traced call is in flight anywhere in the process (footprint.cpp).
//
// Cost on the call path: each thread owns a slot (its own cache line) that only it writes, so
// entering and leaving is a load, a store and a release fence: no read-modify-write. Threads
// beyond the slots share one counter.
#pragma once

namespace gpumem::peak::in_flight {

void enter() noexcept;  // at a traced call's ENTER
void leave() noexcept;  // at its EXIT
// Whether no other thread was in a traced call, for the NVML reading just taken (call it after).
// The calling thread's own call, if any, is where its resource callback fired: what it charged
// so far (a context, a module) is what reconciliation is for.
bool quiet() noexcept;
// Forgets calls whose ENTER or EXIT was missed (a subscription taken or dropped mid-call).
void reset() noexcept;

}  // namespace gpumem::peak::in_flight
