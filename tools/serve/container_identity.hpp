// Which container and pod a process runs in, from its cgroup (no API call), and the names the
// kubelet gives them, from the symlinks it keeps in /var/log/containers
// ("<pod>_<namespace>_<container>-<container id>.log").
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "exposition.hpp"

namespace gpumem::serve {

// Pod UID and container ID from the text of /proc/PID/cgroup (cgroup v1 or v2, cgroupfs or
// systemd driver, containerd, CRI-O or Docker); empty fields where there are none.
ContainerIdentity identity_from_cgroup(std::string_view cgroup_text);

class ContainerDirectory {
 public:
  // `proc`: where processes are read (the host's /proc, or a copy of it in tests);
  // `containers`: the kubelet's /var/log/containers, or empty for none.
  ContainerDirectory(std::filesystem::path proc, std::filesystem::path containers);

  // Rereads the kubelet's names (once per collection).
  void refresh();
  // The identity of `pid`: cgroup, names, and its pid in its own namespace when nested.
  ContainerIdentity identify(unsigned pid) const;
  // The command name (/proc/PID/comm), empty when it cannot be read.
  std::string process_name(unsigned pid) const;

 private:
  struct Names {
    std::string namespace_name;
    std::string pod;
    std::string container;
  };
  std::filesystem::path proc_;
  std::filesystem::path containers_;
  std::map<std::string, Names, std::less<>> by_container_id_;
};

// The exporter's own pid namespace as a spool record names one ("pid:[4026531836]"); empty when
// it cannot be read, as in a record whose writer could not read its own.
std::string own_pid_namespace();

// Whether the publisher of a spool record still runs, also when it published from another pid
// namespace (a container) than the exporter's: its pid there and its namespace are found among
// the host's processes (NSpid in /proc/PID/status, /proc/PID/ns/pid), then its start time checked.
class PublisherLiveness {
 public:
  explicit PublisherLiveness(std::filesystem::path proc);
  bool running(const detail::PublishedTrace& trace);

 private:
  std::filesystem::path proc_;
  std::string own_namespace_;
  bool scanned_ = false;
  std::map<std::pair<std::string, unsigned>, unsigned> host_pids_;  // (namespace, pid) -> pid
};

}  // namespace gpumem::serve
