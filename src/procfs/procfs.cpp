#include "gpumem/internal/procfs.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace gpumem::procfs {
namespace {

std::filesystem::path process_file(const std::filesystem::path& proc, std::string_view pid,
                                   const char* name) {
  return proc / std::filesystem::path(pid) / name;
}

// A whole decimal number, nothing else; nullopt for anything else (an empty field included).
template <typename Number>
std::optional<Number> whole_number(std::string_view text) {
  Number value{};
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || status != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

// At most the first `max_bytes` of a file, read a block at a time (a procfs file says how long it
// is only by ending).
std::optional<std::string> read_text(const std::filesystem::path& file, std::size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char block[16384];
  while (text.size() < max_bytes && in) {
    in.read(block, static_cast<std::streamsize>(std::min(sizeof block, max_bytes - text.size())));
    text.append(block, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  return text;
}

// Field `wanted` (1-based, as proc(5) numbers them; 3 or more) of /proc/PID/stat. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after its last ')'.
std::optional<std::string> stat_field(const std::filesystem::path& proc, std::string_view pid,
                                      int wanted) {
  std::ifstream stat(process_file(proc, pid, "stat"));
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(text).substr(paren + 1);
  for (int field = 3; field <= wanted; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const std::size_t end = std::min(rest.find(' '), rest.size());
    if (end == 0) return std::nullopt;
    if (field == wanted) return std::string(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> pid_namespace(const std::filesystem::path& proc,
                                           std::string_view pid) {
  std::error_code unreadable;
  const std::string link =
      std::filesystem::read_symlink(proc / std::filesystem::path(pid) / "ns" / "pid", unreadable)
          .string();
  if (unreadable || !link.starts_with("pid:[") || !link.ends_with(']')) return std::nullopt;
  const std::optional<std::uint64_t> inode =
      whole_number<std::uint64_t>(std::string_view(link).substr(5, link.size() - 6));
  if (!inode || *inode == 0) return std::nullopt;  // no namespace file has inode 0
  return inode;
}

std::string pid_namespace_text(std::uint64_t inode) {
  return "pid:[" + std::to_string(inode) + "]";
}

std::optional<std::vector<std::uint32_t>> namespace_pids(const std::filesystem::path& proc,
                                                         std::string_view pid) {
  std::ifstream status(process_file(proc, pid, "status"));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::vector<std::uint32_t> pids;
    std::istringstream fields(line.substr(6));
    for (std::uint32_t next = 0; fields >> next;) pids.push_back(next);
    if (pids.empty() || !fields.eof()) return std::nullopt;
    return pids;
  }
  return std::nullopt;
}

std::optional<OwnName> own_name(const std::filesystem::path& proc, std::string_view pid) {
  const std::optional<std::uint64_t> ns = pid_namespace(proc, pid);
  if (!ns) return std::nullopt;
  const std::optional<std::vector<std::uint32_t>> pids = namespace_pids(proc, pid);
  if (!pids) return std::nullopt;
  return OwnName{*ns, pids->back()};
}

std::optional<int> process_named(const std::filesystem::path& proc, const OwnName& name) {
  for (const int pid : process_ids(proc)) {
    if (own_name(proc, std::to_string(pid)) == name) return pid;
  }
  return std::nullopt;
}

std::optional<std::string> command_name(const std::filesystem::path& proc, std::string_view pid) {
  std::ifstream comm(process_file(proc, pid, "comm"));
  std::string name;
  if (!std::getline(comm, name)) return std::nullopt;
  return name;
}

std::optional<std::uint64_t> start_time(const std::filesystem::path& proc, std::string_view pid) {
  const std::optional<std::string> field = stat_field(proc, pid, 22);
  return field ? whole_number<std::uint64_t>(*field) : std::nullopt;
}

std::optional<int> parent_pid(const std::filesystem::path& proc, std::string_view pid) {
  const std::optional<std::string> field = stat_field(proc, pid, 4);
  return field ? whole_number<int>(*field) : std::nullopt;
}

std::optional<std::string> cgroups(const std::filesystem::path& proc, std::string_view pid) {
  return read_text(process_file(proc, pid, "cgroup"), 64 * 1024);
}

std::optional<std::vector<std::string>> command_line(const std::filesystem::path& proc,
                                                     std::string_view pid) {
  std::ifstream file(process_file(proc, pid, "cmdline"), std::ios::binary);
  if (!file) return std::nullopt;
  std::vector<std::string> arguments;
  for (std::string argument; std::getline(file, argument, '\0');) arguments.push_back(argument);
  if (file.bad()) return std::nullopt;
  return arguments;
}

std::optional<std::string> environment(const std::filesystem::path& proc, std::string_view pid,
                                       std::size_t max_bytes) {
  return read_text(process_file(proc, pid, "environ"), max_bytes);
}

std::optional<std::filesystem::path> executable(const std::filesystem::path& proc,
                                                std::string_view pid) {
  std::error_code unreadable;
  std::filesystem::path target =
      std::filesystem::read_symlink(process_file(proc, pid, "exe"), unreadable);
  if (unreadable || target.empty()) return std::nullopt;
  return target;
}

std::vector<int> process_ids(const std::filesystem::path& proc) {
  std::vector<int> pids;
  std::error_code unlisted;
  for (std::filesystem::directory_iterator entry(proc, unlisted), end; !unlisted && entry != end;
       entry.increment(unlisted)) {
    const std::optional<int> pid = whole_number<int>(entry->path().filename().string());
    if (pid && *pid > 0) pids.push_back(*pid);
  }
  return pids;
}

bool in_initial_pid_namespace() {
  const std::optional<std::uint64_t> own = pid_namespace("/proc", "self");
  return !own || *own == kInitialPidNamespace;
}

}  // namespace gpumem::procfs
