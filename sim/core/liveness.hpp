// Whether a process that holds simulated GPU memory still exists. A zombie counts as gone (its
// memory would be freed by the real driver already), and so does a reused pid.
//
// Pids are those of the pid namespace the simulated driver sees (a real driver sees the host's):
// the namespace of the procfs at GPUMEM_SIM_HOST_PROC, default /proc. A process in a container
// (a pid namespace with its own /proc) names the host's procfs there to be seen as the driver
// would see it; see docs/simulator.md.
#pragma once

#include <sys/types.h>
#include <cstdint>

namespace gpumem::sim {

// The calling process's pid in the driver's namespace (its own when that cannot be read).
pid_t driver_pid();

// The kernel's start time of `pid` (clock ticks since boot), 0 when unknown.
std::uint64_t process_start_time(pid_t pid);

bool process_alive(pid_t pid, std::uint64_t start_time);

// Whether the driver's pids are the caller's own (its procfs is the caller's namespace's).
bool driver_pids_are_own();

// Only whether the pid exists (one system call): what the frequent memory path can afford.
bool process_exists(pid_t pid);

}  // namespace gpumem::sim
