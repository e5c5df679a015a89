// Pid namespaces as /proc shows them (namespaces(7), proc(5)): which namespace a process is in,
// and its pid in each namespace from the procfs's own down to the process's. NVML reports the
// pids the driver sees, those of the initial namespace; a process in a container knows its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::procfs {

// The inode of the initial pid namespace: a constant of the kernel (PROC_PID_INIT_INO) since
// namespaces became files (Linux 3.8).
inline constexpr std::uint64_t kInitialPidNamespace = 0xEFFFFFFCu;

// The inode of the pid namespace of `pid` ("self": the caller) under `proc`; 0 when it cannot be
// read (gone, not ours to inspect, no namespace support).
std::uint64_t pid_namespace(const std::filesystem::path& proc, const std::string& pid);

// The "NSpid:" line of /proc/PID/status: the pid in each nested namespace, the procfs's first and
// the process's own last; empty when it cannot be read (gone, or a kernel before 4.1).
std::vector<std::uint32_t> namespace_pids(const std::filesystem::path& proc,
                                          const std::string& pid);

// Whether the caller runs in the initial pid namespace, where NVML's pids are its own. Unknown
// (namespaces cannot be read) counts as yes: nothing says otherwise.
bool in_initial_pid_namespace();

}  // namespace gpumem::procfs

#pragma GCC visibility pop
