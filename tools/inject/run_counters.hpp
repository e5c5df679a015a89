// Where the run counters were: tools/cli/run_monitor.hpp still includes them by this name (a debt
// scripts/check_rooms.py lists). Include "gpumem/internal/run_counters.hpp" instead; this file and
// the gpumem_run_counters target go once nothing names it.
#pragma once

#include "gpumem/internal/run_counters.hpp"
