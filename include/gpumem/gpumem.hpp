/**
 * @file gpumem/gpumem.hpp
 * @brief gpumem: how much GPU memory code uses, and how high it peaks. The whole public API:
 * fastai.utils.mem's queries and tracer (memory.hpp, trace.hpp), device identity (device.hpp),
 * cache-release hooks (cache.hpp), diagnostics (diagnostics.hpp), peak counters (peak.hpp),
 * publishing to the exporter (publish.hpp), test allocations (allocate.hpp) and the version.
 *
 * Link `gpumem::gpumem`. NVIDIA's libraries are loaded at run time on first use: a program built
 * with gpumem runs, and reads zeros, on a machine without a GPU.
 *
 * @code
 * #include <gpumem/gpumem.hpp>
 *
 * int main() {
 *   gpumem::preload();  // the CUDA context's cost is paid before tracing
 *   gpumem::TraceScope scope{"whole run"};
 *   run_the_model();
 * }  // △Used Peaked MB:  6,144  1,280 (whole run: exit)
 * @endcode
 */
#pragma once

#include "gpumem/allocate.hpp"
#include "gpumem/budget.hpp"
#include "gpumem/cache.hpp"
#include "gpumem/device.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/peak.hpp"
#include "gpumem/publish.hpp"
#include "gpumem/reading.hpp"
#include "gpumem/trace.hpp"
#include "gpumem/version.hpp"
