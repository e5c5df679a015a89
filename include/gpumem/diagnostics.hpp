// Why a query fell back to zeros: each distinct reason ("NVML not found", "GPU 1 lost", …) is
// recorded once, so tools can tell the user without the library writing to stderr itself.
#pragma once

#include <string>
#include <vector>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

// Every distinct diagnostic so far, oldest first.
std::vector<std::string> diagnostics();
// The newest diagnostic, empty when there is none.
std::string last_diagnostic();

// Whether the NVIDIA libraries could be loaded and initialised (each loads on first use).
bool nvml_available() noexcept;
bool cuda_available() noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
