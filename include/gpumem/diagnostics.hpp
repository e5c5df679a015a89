/**
 * @file gpumem/diagnostics.hpp
 * @brief Why a query fell back to zeros, or a source to a lesser one.
 *
 * gpumem never writes to stderr itself: each distinct reason ("NVML not found", "GPU 1 lost
 * (NVML_ERROR_GPU_IS_LOST)", "CUPTI is held by another tool (…)") is recorded once, oldest
 * first, for tools to show. Every function here is thread-safe.
 *
 * @code
 * #include <gpumem/diagnostics.hpp>
 * #include <gpumem/memory.hpp>
 *
 * if (gpumem::gpu_mem_get().total == 0) {
 *   std::fprintf(stderr, "no GPU memory to report: %s\n", gpumem::last_diagnostic().c_str());
 * }
 * @endcode
 */
#pragma once

#include <string>
#include <vector>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

/**
 * @return every distinct diagnostic recorded so far in this process, oldest first
 * @throws std::bad_alloc when the copy cannot be made
 */
std::vector<std::string> diagnostics();

/**
 * @return the newest diagnostic; empty when there is none
 * @throws std::bad_alloc when the copy cannot be made
 */
std::string last_diagnostic();

/// @return whether NVML could be loaded and initialised (loaded on first use, by this call too)
bool nvml_available() noexcept;
/// @return whether the CUDA driver library could be loaded (loaded on first use, by this call too)
bool cuda_available() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
