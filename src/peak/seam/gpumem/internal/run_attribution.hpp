// Attribution for `gpumem run`: the injection library holds one attributing exact slot per
// device ordinal for the life of the measured process, without a PeakCounter (which would
// resolve devices through NVML), and reads each device's peak at exit.
#pragma once

#include <vector>

#include "gpumem/attribution.hpp"

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::detail {

// Attaches an attributing slot to the exact channel of every ordinal below `devices` (the exact
// source must be held). Call once; false when there is nothing to attach.
bool start_run_attribution(int devices);

// Each attached device's peak since start_run_attribution, symbolized; devices that never held
// memory are left out.
std::vector<AttributionSnapshot> run_attribution_peaks();

}  // namespace gpumem::detail
