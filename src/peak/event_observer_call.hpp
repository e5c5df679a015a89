// The exact source's side of event_observer.hpp.
#pragma once

#include <cstdint>

namespace gpumem::detail {

// Calls the observer, if one is set.
void notify_event_observer(int device, std::int64_t delta_bytes) noexcept;

}  // namespace gpumem::detail
