// The exact source's side of event_observer.hpp.
#pragma once

#include <cstdint>

namespace gpumem::detail {

// Calls the observer, if one is set.
void notify_event_observer(int device, std::int64_t delta_bytes) noexcept;
// Calls the call observer, if one is set.
void notify_call_observer(bool entering) noexcept;

}  // namespace gpumem::detail
