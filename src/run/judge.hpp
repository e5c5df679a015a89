// Which of the command's GPU processes were counted exactly, which escaped and why, and so the
// run's mode (result.cpp).
#pragma once

#include "gpumem/internal/run_counters.hpp"
#include "gpumem/internal/run_result.hpp"
#include "run/monitor.hpp"

namespace gpumem::run {

// Fills `result`'s processes, the counts of exact and escaped processes, the pid namespaces'
// findings and the mode: exact only when every GPU process was. `counters` is null in a sampled
// run, whose reason `result.fallback_reason` already gives.
void judge_processes(const RunCounters* counters, const RunMonitor& monitor, RunResult& result);

}  // namespace gpumem::run
