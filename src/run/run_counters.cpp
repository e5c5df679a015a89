#include "gpumem/internal/run_counters.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "gpumem/internal/procfs.hpp"

namespace gpumem::run {

namespace {

// Maps an open counters file; `create` sizes it with its pages allocated (a file system with no
// room fails here, not with a SIGBUS at the first touch) and initialises it.
RunCounters* map_fd(int fd, bool create, const std::string& name, std::string* error) {
  auto fail = [&](const std::string& what, int code) -> RunCounters* {
    if (error != nullptr) *error = what + " " + name + ": " + std::strerror(code);
    return nullptr;
  };
  if (create) {
    if (::ftruncate(fd, sizeof(RunCounters)) != 0) return fail("cannot size", errno);
    if (const int code = ::posix_fallocate(fd, 0, sizeof(RunCounters)); code != 0)
      return fail("no room for", code);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<std::size_t>(info.st_size) < sizeof(RunCounters))
    return fail("not a counters file:", EINVAL);
  void* memory = ::mmap(nullptr, sizeof(RunCounters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return fail("cannot map", errno);
  // Each side touches a few scattered pages of it (a device's line, a process slot, a record):
  // without readahead a touch maps one page. Advice only: a refusal changes nothing else.
  ::madvise(memory, sizeof(RunCounters), MADV_RANDOM);
  auto* counters = static_cast<RunCounters*>(memory);
  if (create) {
    // ftruncate zero-filled the file, and zero is every atomic's initial value.
    counters->magic = kCountersMagic;
    counters->version = kCountersVersion;
    counters->monitor_pid = static_cast<std::int32_t>(::getpid());
  } else if (counters->magic != kCountersMagic || counters->version != kCountersVersion) {
    ::munmap(memory, sizeof(RunCounters));
    return fail("not a counters file:", EINVAL);
  }
  return counters;
}

// "/proc/PID/fd/N": N, else -1.
int descriptor_of(const std::string& path) {
  const std::size_t at = path.rfind("/fd/");
  if (path.rfind("/proc/", 0) != 0 || at == std::string::npos) return -1;
  char* end = nullptr;
  const long fd = std::strtol(path.c_str() + at + 4, &end, 10);
  return end != nullptr && *end == '\0' && fd >= 0 && fd < 1 << 20 ? static_cast<int>(fd) : -1;
}

}  // namespace

RunCounters* map_run_counters(const std::string& path, bool create, std::string* error) {
  int fd = create ? ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)
                  : ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  // The monitor's memory file named through its /proc entry, which a process in a pid namespace
  // with a /proc of its own cannot see: the descriptor it inherited is the same file.
  if (fd < 0 && !create) {
    if (const int inherited = descriptor_of(path); inherited >= 0)
      fd = ::open(("/proc/self/fd/" + std::to_string(inherited)).c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) {
    if (error != nullptr) *error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  RunCounters* counters = map_fd(fd, create, path, error);
  ::close(fd);
  return counters;
}

RunCounters* create_run_counters(std::string* path, int* descriptor, std::string* error) {
  // In memory, not in TMPDIR: a full or read-only TMPDIR cannot touch the run, and sealed, so
  // that no process of the command can shrink it under the others' mappings (a SIGBUS in each).
  const int fd = ::memfd_create("gpumem-run-counters", MFD_ALLOW_SEALING);
  if (fd < 0) {
    if (error != nullptr)
      *error = std::string("cannot create the counters: ") + std::strerror(errno);
    return nullptr;
  }
  RunCounters* counters = map_fd(fd, /*create=*/true, "the run's counters", error);
  if (counters != nullptr &&
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    if (error != nullptr) *error = std::string("cannot seal the counters: ") + std::strerror(errno);
    unmap_run_counters(counters);
    counters = nullptr;
  }
  if (counters == nullptr) {
    ::close(fd);
    return nullptr;
  }
  // Left open (and inherited by the command, whose processes may also reach it through their own
  // /proc/self/fd) for as long as gpumem runs.
  *path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
  *descriptor = fd;
  return counters;
}

void give_back(RunCounters& counters, ProcessSlot& slot) noexcept {
  for (int ordinal = 0; ordinal < detail::kLedgerOrdinals; ++ordinal) {
    const std::int64_t held = detail::take_ledger_level(slot.ledger[ordinal]);
    // The mirror added to `current` only what a device slot was named for.
    const std::int32_t device = slot.ordinal_device[ordinal].load(std::memory_order_acquire) - 1;
    if (held != 0 && device >= 0 && device < kMaxDevices) add_event(counters, device, -held);
  }
}

std::uint64_t own_pid_namespace() noexcept {
  // The shared file has a field for it, so procfs's "unknown" is kUnknownNamespace there.
  try {
    return procfs::pid_namespace("/proc", "self").value_or(kUnknownNamespace);
  } catch (...) {  // std::bad_alloc
    return kUnknownNamespace;
  }
}

void note_process_slot(RunCounters& counters, int index) noexcept {
  std::int32_t used = counters.processes_used.load(std::memory_order_relaxed);
  while (used < index + 1 && !counters.processes_used.compare_exchange_weak(
                                 used, index + 1, std::memory_order_acq_rel)) {
  }
}

void record_attach(RunCounters& counters, std::int32_t pid, std::uint64_t pid_namespace,
                   std::int32_t state, const std::string& reason) noexcept {
  const std::int32_t index = counters.record_count.fetch_add(1, std::memory_order_acq_rel);
  if (index < 0 || index >= kMaxRecords) return;
  AttachRecord& record = counters.records[index];
  const std::size_t length = std::min(reason.size(), sizeof record.reason - 1);
  std::memcpy(record.reason, reason.data(), length);
  record.reason[length] = '\0';
  record.pid.store(pid, std::memory_order_relaxed);
  record.pid_namespace.store(pid_namespace, std::memory_order_relaxed);
  record.state.store(state, std::memory_order_release);
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A slot being named is named within a few instructions; one whose namer died in between
// (SIGKILL at that very moment), or that a process of the command left in that state, is
// skipped after 100 µs: a stuck slot costs each process that much once, never a stall.
bool wait_until_named(const DeviceCounters& device) noexcept {
  const std::int64_t deadline = monotonic_ns() + 100'000;
  for (int spin = 0;; ++spin) {
    if (device.state.load(std::memory_order_acquire) == kDeviceNamed) return true;
    if (spin > 64) {
      if (monotonic_ns() > deadline) return false;
      ::sched_yield();
    }
  }
}

}  // namespace

std::optional<Uuid> parse_uuid(std::string_view text) {
  if (text.starts_with("GPU-") || text.starts_with("MIG-")) text.remove_prefix(4);
  Uuid bytes{};
  std::size_t digits = 0;
  for (char c : text) {
    if (c == '-') continue;
    const int value = hex_value(c);
    if (value < 0 || digits >= 32) return std::nullopt;
    bytes[digits / 2] =
        static_cast<unsigned char>(bytes[digits / 2] | (digits % 2 == 0 ? value << 4 : value));
    ++digits;
  }
  if (digits != 32) return std::nullopt;
  return bytes;
}

int find_or_claim_device(RunCounters& counters, const Uuid& uuid) noexcept {
  // Slots are named in order, and a claimant waits for a slot being named before it looks
  // further: two processes naming the same device at once end up in the same slot.
  for (int index = 0; index < kMaxDevices; ++index) {
    DeviceCounters& device = counters.devices[index];
    std::uint32_t state = device.state.load(std::memory_order_acquire);
    if (state == kDeviceFree) {
      if (device.state.compare_exchange_strong(state, kDeviceNaming, std::memory_order_acq_rel)) {
        std::memcpy(device.uuid, uuid.data(), uuid.size());
        device.state.store(kDeviceNamed, std::memory_order_release);
        return index;
      }
    }
    if (state == kDeviceNaming && !wait_until_named(device)) continue;
    if (std::memcmp(device.uuid, uuid.data(), uuid.size()) == 0) return index;
  }
  return -1;
}

int find_device(const RunCounters& counters, const Uuid& uuid) noexcept {
  for (int index = 0; index < kMaxDevices; ++index) {
    const DeviceCounters& device = counters.devices[index];
    const std::uint32_t state = device.state.load(std::memory_order_acquire);
    if (state == kDeviceFree) return -1;  // named in order: none further
    if (state == kDeviceNamed && std::memcmp(device.uuid, uuid.data(), uuid.size()) == 0)
      return index;
  }
  return -1;
}

bool add_alias(RunCounters& counters, const Uuid& uuid, int device) noexcept {
  if (counters.alias_count < 0 || counters.alias_count >= kMaxAliases) return false;
  DeviceAlias& alias = counters.aliases[counters.alias_count++];
  std::memcpy(alias.uuid, uuid.data(), uuid.size());
  alias.device = device;
  return true;
}

int counting_device(RunCounters& counters, const Uuid& uuid) noexcept {
  const int aliases = std::clamp(counters.alias_count, 0, kMaxAliases);
  for (int index = 0; index < aliases; ++index) {
    const DeviceAlias& alias = counters.aliases[index];
    if (std::memcmp(alias.uuid, uuid.data(), uuid.size()) == 0 && alias.device >= 0 &&
        alias.device < kMaxDevices)
      return alias.device;
  }
  return find_or_claim_device(counters, uuid);
}

void RingReader::drain(
    const EventRing& ring, bool final,
    const std::function<void(int device, std::int64_t time_ns, std::int64_t level)>& sink) {
  const std::uint64_t head = ring.head.load(std::memory_order_acquire);
  if (head - position > kEventRingSize) {  // overwritten before we came
    lost += head - kEventRingSize - position;
    position = head - kEventRingSize;
  }
  while (position < head) {
    const TimelineEvent& event = ring.events[position % kEventRingSize];
    const std::uint64_t sequence = event.sequence.load(std::memory_order_acquire);
    if (sequence == position + 1) {
      const std::int64_t time_ns = event.time_ns.load(std::memory_order_relaxed);
      const std::int64_t level = event.level.load(std::memory_order_relaxed);
      const std::int32_t device = event.device.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (event.sequence.load(std::memory_order_relaxed) == sequence && device >= 0 &&
          device < kMaxDevices) {
        sink(device, time_ns, level);
      } else {
        ++lost;  // overwritten while we read it
      }
    } else if (sequence > position + 1) {
      ++lost;  // overwritten by an event one lap later
    } else if (!final && head - position < kEventRingSize / 2) {
      return;  // still being written: read it next time
    } else {
      ++lost;  // its writer never finished (it died mid-write), or this is the last drain
    }
    ++position;
  }
}

void unmap_run_counters(RunCounters* counters) {
  if (counters != nullptr) ::munmap(counters, sizeof(RunCounters));
}

}  // namespace gpumem::run
