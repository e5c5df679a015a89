// Out-of-memory forensics: when an exactly traced allocation fails with out-of-memory, what was
// live (in attribution mode), the request, the device's free and total memory and, where this
// process may use NVML, the device's other processes. Kept as gpumem::last_oom() and written to
// $GPUMEM_OOM_REPORT when set.
#pragma once

#include <cstdint>

#include "gpumem/attribution.hpp"

namespace gpumem::peak {

// On the failing thread, at the failing call's EXIT (its context is current).
void allocation_failed(int device, std::uint64_t bytes, BlockKind kind) noexcept;

// The device as a snapshot names it; NVML only where the exact source may use it.
SnapshotDevice snapshot_device(int device) noexcept;

}  // namespace gpumem::peak
