// Whether a process that holds simulated GPU memory still exists. A zombie counts as gone (its
// memory would be freed by the real driver already), and so does a reused pid.
#pragma once

#include <sys/types.h>
#include <cstdint>

namespace gpumem::sim {

// The kernel's start time of `pid` (clock ticks since boot), 0 when unknown.
std::uint64_t process_start_time(pid_t pid);

bool process_alive(pid_t pid, std::uint64_t start_time);

// Only whether the pid exists (one system call): what the frequent memory path can afford.
bool process_exists(pid_t pid);

}  // namespace gpumem::sim
