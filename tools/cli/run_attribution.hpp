// `gpumem run --attribute/--html`: what the terminal summary shows of the run's attribution
// document (the engine makes the document: gpumem/internal/run_engine.hpp).
#pragma once

#include <cstddef>
#include <string>

#include "attribution/document.hpp"
#include "attribution/views.hpp"

namespace gpumem::cli {

// What the terminal summary adds: the top stacks at the highest peak and at each
// out-of-memory failure.
std::string attribution_summary(const attribution::Document& document, std::size_t top,
                                const attribution::TextOptions& options);

}  // namespace gpumem::cli
