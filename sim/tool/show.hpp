// `gpumem-sim show`: the shared state as JSON.
#pragma once

#include <string>

#include "core/shared_state.hpp"

namespace gpumem::sim::tool {

std::string state_json(SharedState& state);

}  // namespace gpumem::sim::tool
