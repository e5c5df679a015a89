// The exact source: CUPTI driver-API callbacks on every device allocation and free of this
// process, feeding Stream::exact (and Stream::managed) channels. The subscription is held only
// while some counter needs it, so a user's profiler can take CUPTI outside traces.
#pragma once

#include <string>

// A seam between rooms, which no tool calls: hidden in libgpumem.so, as the rest of src/ is.

namespace gpumem::peak {

// Takes a reference on the subscription, subscribing on the first. false when CUPTI cannot be
// used (not found, or held by another tool): exact_status() then says why.
bool acquire_exact() noexcept;
// Drops a reference; the last one unsubscribes.
void release_exact() noexcept;

std::string exact_status();

}  // namespace gpumem::peak
