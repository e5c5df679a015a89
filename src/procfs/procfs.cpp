#include "gpumem/internal/procfs.hpp"

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
  std::ifstream file(process_file(proc, pid, "cgroup"), std::ios::binary);
  if (!file) return std::nullopt;
  std::string text(64 * 1024, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad()) return std::nullopt;
  text.resize(static_cast<std::size_t>(file.gcount()));
  return text;
}

bool in_initial_pid_namespace() {
  const std::optional<std::uint64_t> own = pid_namespace("/proc", "self");
  return !own || *own == kInitialPidNamespace;
}

}  // namespace gpumem::procfs
