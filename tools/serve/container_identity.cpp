#include "container_identity.hpp"

#include <algorithm>
#include <cctype>

#include "gpumem/internal/procfs.hpp"

namespace gpumem::serve {
namespace {

constexpr std::size_t kMaxContainers = 4096;  // names kept from the kubelet's directory

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
}

// "0123abcd-…" (or with '_' as systemd writes it) at the start of `text`, normalised to '-'.
std::string uuid_at(std::string_view text) {
  if (text.size() < 36) return {};
  std::string uuid(text.substr(0, 36));
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash && (uuid[i] == '-' || uuid[i] == '_')) {
      uuid[i] = '-';
    } else if (dash || !is_hex(std::string_view(&uuid[i], 1))) {
      return {};
    }
  }
  return uuid;
}

// A 64-hex container ID from a cgroup path segment: "<id>", "cri-containerd-<id>.scope",
// "crio-<id>.scope", "docker-<id>.scope".
std::string container_id_of(std::string_view segment) {
  if (segment.ends_with(".scope")) segment.remove_suffix(6);
  const std::size_t dash = segment.rfind('-');
  if (dash != std::string_view::npos) segment.remove_prefix(dash + 1);
  return segment.size() == 64 && is_hex(segment) ? std::string(segment) : std::string();
}

}  // namespace

ContainerIdentity identity_from_cgroup(std::string_view text) {
  ContainerIdentity identity;
  while (!text.empty()) {
    const std::size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    // "hierarchy-ID:controllers:path"
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view path = line.substr(second + 1);
    ContainerIdentity found;
    while (!path.empty()) {
      const std::size_t slash = std::min(path.find('/'), path.size());
      const std::string_view segment = path.substr(0, slash);
      path.remove_prefix(std::min(slash + 1, path.size()));
      if (const std::size_t pod = segment.rfind("pod"); pod != std::string_view::npos) {
        if (std::string uuid = uuid_at(segment.substr(pod + 3)); !uuid.empty()) {
          found.pod_uid = std::move(uuid);
        }
      }
      if (std::string id = container_id_of(segment); !id.empty()) found.container_id = id;
    }
    if (!found.container_id.empty() || !found.pod_uid.empty()) return found;
  }
  return identity;
}

ContainerDirectory::ContainerDirectory(std::filesystem::path proc, std::filesystem::path containers)
    : proc_(std::move(proc)), containers_(std::move(containers)) {}

void ContainerDirectory::refresh() {
  by_container_id_.clear();
  if (containers_.empty()) return;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(containers_, error)) {
    if (by_container_id_.size() >= kMaxContainers) break;
    // "<pod>_<namespace>_<container>-<64 hex>.log": pod and namespace names hold no '_'.
    std::string name = entry.path().filename().string();
    if (!name.ends_with(".log") || name.size() < 4 + 65) continue;
    name.resize(name.size() - 4);
    const std::string id = name.substr(name.size() - 64);
    if (name[name.size() - 65] != '-' || !is_hex(id)) continue;
    name.resize(name.size() - 65);
    const std::size_t first = name.find('_');
    const std::size_t second = first == std::string::npos ? first : name.find('_', first + 1);
    if (second == std::string::npos) continue;
    by_container_id_[id] = Names{name.substr(first + 1, second - first - 1), name.substr(0, first),
                                 name.substr(second + 1)};
  }
}

ContainerIdentity ContainerDirectory::identify(unsigned pid) const {
  const std::string name = std::to_string(pid);
  ContainerIdentity identity = identity_from_cgroup(procfs::cgroups(proc_, name).value_or(""));
  if (auto names = by_container_id_.find(identity.container_id);
      !identity.container_id.empty() && names != by_container_id_.end()) {
    identity.namespace_name = names->second.namespace_name;
    identity.pod = names->second.pod;
    identity.container = names->second.container;
  }
  // "NSpid: 4242 17": the pid in each nested namespace, the process's own last.
  const auto pids = procfs::namespace_pids(proc_, name);
  if (pids && pids->size() > 1 && pids->back() != pids->front())
    identity.container_pid = std::to_string(pids->back());
  return identity;
}

std::string ContainerDirectory::process_name(unsigned pid) const {
  return procfs::command_name(proc_, std::to_string(pid)).value_or("");
}

std::string own_pid_namespace() {
  const std::optional<std::uint64_t> inode = procfs::pid_namespace("/proc", "self");
  return inode ? procfs::pid_namespace_text(*inode) : std::string();
}

PublisherLiveness::PublisherLiveness(std::filesystem::path proc) : proc_(std::move(proc)) {
  own_namespace_ = own_pid_namespace();
}

bool PublisherLiveness::running(const detail::PublishedTrace& trace) {
  if (trace.pid_namespace.empty() || trace.pid_namespace == own_namespace_) {
    return detail::process_running(proc_, trace.pid, trace.pid_start);
  }
  if (!scanned_) {
    // Once per collection, and only when some record comes from another namespace.
    scanned_ = true;
    for (const int host_pid : procfs::process_ids(proc_)) {
      const std::optional<procfs::OwnName> name = procfs::own_name(proc_, std::to_string(host_pid));
      if (!name) continue;
      std::string ns = procfs::pid_namespace_text(name->pid_namespace);
      if (ns == own_namespace_) continue;
      host_pids_[{std::move(ns), name->pid}] = static_cast<unsigned>(host_pid);
    }
  }
  const auto host = host_pids_.find({trace.pid_namespace, trace.pid});
  return host != host_pids_.end() && detail::process_running(proc_, host->second, trace.pid_start);
}

}  // namespace gpumem::serve
