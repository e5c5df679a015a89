// What /proc says of a process (proc(5), namespaces(7)), read in one room (src/procfs): its pid
// namespace and its pid in each nested one, its command name, its start time and parent, its
// cgroups, its arguments, environment and executable; and which processes there are. NVML reports
// the pids the driver sees, those of the initial namespace; a process in a container knows its own.
//
// Every function reads one fact of process `pid` ("self": the caller, or a number) under `proc`
// ("/proc", the host's mounted elsewhere, or a tree laid out alike), and returns std::nullopt when
// it cannot be read: the process is gone, not ours to inspect, or the kernel does not say. That is
// the one spelling of "unknown": no 0, ~0 or empty value stands for it here; a caller that stores
// one (a file's fixed field) converts at its own boundary and says so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::procfs {

// The inode of the initial pid namespace: a constant of the kernel (PROC_PID_INIT_INO) since
// namespaces became files (Linux 3.8).
inline constexpr std::uint64_t kInitialPidNamespace = 0xEFFFFFFCu;

// The pid namespace of `pid`: the inode its /proc/PID/ns/pid link names ("pid:[4026531836]").
std::optional<std::uint64_t> pid_namespace(const std::filesystem::path& proc, std::string_view pid);

// "pid:[INODE]": a pid namespace as its /proc link reads (and as a spool record names it).
std::string pid_namespace_text(std::uint64_t inode);

// The "NSpid:" line of /proc/PID/status: the pid in each nested namespace, the procfs's first and
// the process's own last; never empty (a kernel before 4.1 has no such line: nullopt).
std::optional<std::vector<std::uint32_t>> namespace_pids(const std::filesystem::path& proc,
                                                         std::string_view pid);

// A process as it names itself: its pid namespace and its pid there (NSpid's last). A process of
// a nested namespace is known to others by this name (a spool record, the run's counters), and
// found under a procfs by it.
struct OwnName {
  std::uint64_t pid_namespace = 0;
  std::uint32_t pid = 0;
  friend bool operator==(const OwnName&, const OwnName&) = default;
};

// What process `pid` calls itself: its pid namespace and NSpid's last.
std::optional<OwnName> own_name(const std::filesystem::path& proc, std::string_view pid);

// The pid under `proc` of the process that calls itself `name`, by one pass over `proc`'s
// processes; nullopt when none does.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<int> process_named(
    const std::filesystem::path& proc, const OwnName& name);

// The command name, /proc/PID/comm without its newline (at most 15 bytes, the kernel's cut).
std::optional<std::string> command_name(const std::filesystem::path& proc, std::string_view pid);

// The start time in clock ticks since boot (field 22 of /proc/PID/stat): with the pid, it names a
// process for good, as a pid alone is reused.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<std::uint64_t> start_time(
    const std::filesystem::path& proc, std::string_view pid);

// The parent's pid (field 4 of /proc/PID/stat; 0 for the namespace's first process).
std::optional<int> parent_pid(const std::filesystem::path& proc, std::string_view pid);

// The text of /proc/PID/cgroup (cgroup v1 or v2), at most its first 64 KiB.
std::optional<std::string> cgroups(const std::filesystem::path& proc, std::string_view pid);

// The arguments the process was started with (/proc/PID/cmdline), program name first; empty for a
// kernel thread or a zombie, which have none.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<std::vector<std::string>> command_line(
    const std::filesystem::path& proc, std::string_view pid);

// The environment the process was started with (/proc/PID/environ): "NAME=value" entries each
// ended by '\0', as the kernel gives them, at most the first `max_bytes`.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<std::string> environment(
    const std::filesystem::path& proc, std::string_view pid, std::size_t max_bytes);

// The file the process runs (/proc/PID/exe).
std::optional<std::filesystem::path> executable(const std::filesystem::path& proc,
                                                std::string_view pid);

// The processes `proc` lists (its numeric entries), in no particular order; empty when it cannot
// be listed.
std::vector<int> process_ids(const std::filesystem::path& proc);

// Whether the caller runs in the initial pid namespace, where NVML's pids are its own. Unknown
// (namespaces cannot be read) counts as yes: nothing says otherwise.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) bool in_initial_pid_namespace();

}  // namespace gpumem::procfs

#pragma GCC visibility pop
