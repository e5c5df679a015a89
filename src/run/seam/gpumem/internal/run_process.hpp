// The measured side of `gpumem run`: what each CUDA process of the command does once the CUDA
// driver has loaded the injection library into it (tools/inject, through CUDA_INJECTION64_PATH).
// A seam (src/run implements it), so that the library, not the injection library, holds the
// measurement: the adapter only calls join_run().
#pragma once

#pragma GCC visibility push(default)

namespace gpumem::run {

// Joins the run that GPUMEM_RUN_COUNTERS names, once per process; outside a run it does nothing.
// Joining claims the process's slot in the counters file, places the exact source's ledger there
// (every event then moves it once, after adding to its device's level), brackets each traced
// call in the slot's `calls`, subscribes to CUPTI for the life of the process, and with
// --attribute/--html records attribution into the run's folder. A forked child joins again in its
// own slot; at exit the slot is given back. A process that cannot be counted exactly (CUPTI
// refused, every slot taken, a device with no UUID) records why in the file and is left to the
// monitor's sampling. Never throws; must not be called from inside a CUDA call.
void join_run() noexcept;

}  // namespace gpumem::run

#pragma GCC visibility pop
