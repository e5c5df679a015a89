// The exact source's view of what the driver holds for this process beyond allocation events:
// the reservations of stream-ordered pools and of graph memory (which the driver reports and
// gpumem re-reads after each call that can change them), and what no call shows — the CUDA
// context, loaded modules and the driver's rounding — reconciled from NVML's per-process figure.
// Every change moves the device's exact channel, like an event, so the channel's level is the
// process footprint.
#pragma once

#include <cstdint>

#include "driver/abi/cuda.hpp"

namespace gpumem::peak::footprint {

// A pool an allocation came from (nullptr: the device's current pool); its reservation counts
// from then on, and is re-read now.
void pool_used(abi::CUmemoryPool pool, int device) noexcept;
void pool_destroyed(abi::CUmemoryPool pool) noexcept;
void current_pool_changed(int device) noexcept;
// Re-reads the reservations of the pools seen on a device (-1: every device).
void refresh_pools(int device) noexcept;
// Re-reads the device's graph-memory reservation (-1: every device seen).
void refresh_graphs(int device) noexcept;
// After a synchronisation: pools may have trimmed, graph memory may have been released.
void synchronized() noexcept;

// Levels the device's channel up to this process's memory as NVML reports it (the context,
// modules, rounding) and down to what the events account for when NVML reports less. false when
// NVML gives no per-process figure for this process (then the context is not covered).
bool reconcile(int device) noexcept;
// Whether reconcile() asks NVML at all (detail::set_footprint_reconciliation).
bool reconciling() noexcept;

// Brings everything the driver can report into the level before a counter starts or reads.
void refresh_for_reading(int device) noexcept;

// The gpumem::Coverage bits the exact source accounts for on a device now.
std::uint32_t coverage(int device) noexcept;

// Forgets pools, graph levels and reconciliation (a new subscription starts from nothing).
void clear() noexcept;

}  // namespace gpumem::peak::footprint
