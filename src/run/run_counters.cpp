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

#include "gpumem/internal/procfs.hpp"

namespace gpumem::run {

RunCounters* map_run_counters(const std::string& path, bool create, std::string* error) {
  auto fail = [&](const char* what) -> RunCounters* {
    if (error != nullptr) *error = std::string(what) + " " + path + ": " + std::strerror(errno);
    return nullptr;
  };
  const int fd = create ? ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)
                        : ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail("cannot open");
  if (create && ::ftruncate(fd, sizeof(RunCounters)) != 0) {
    ::close(fd);
    return fail("cannot size");
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<std::size_t>(info.st_size) < sizeof(RunCounters)) {
    ::close(fd);
    errno = EINVAL;
    return fail("not a counters file:");
  }
  void* memory = ::mmap(nullptr, sizeof(RunCounters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED) return fail("cannot map");
  // The file is sparse and each side touches a few scattered pages of it (a device's line, a
  // process slot, a record). A fault on a regular file reads ahead around the page, and on a
  // filesystem with large folios (ext4 under /tmp) that zero-fills and maps hundreds of kilobytes
  // per touch: 19% of `gpumem run --mode exact -- true`, and the same in each measured process.
  // Without readahead a touch maps one page. Advice only: a refusal changes nothing else.
  ::madvise(memory, sizeof(RunCounters), MADV_RANDOM);
  auto* counters = static_cast<RunCounters*>(memory);
  if (create) {
    // ftruncate zero-filled the file, and zero is every atomic's initial value.
    counters->magic = kCountersMagic;
    counters->version = kCountersVersion;
    counters->monitor_pid = static_cast<std::int32_t>(::getpid());
  } else if (counters->magic != kCountersMagic || counters->version != kCountersVersion) {
    ::munmap(memory, sizeof(RunCounters));
    errno = EINVAL;
    return fail("not a counters file:");
  }
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
// (SIGKILL at that very moment) is skipped after about a second.
bool wait_until_named(const DeviceCounters& device) noexcept {
  for (int spin = 0; spin < 1'000'000; ++spin) {
    if (device.state.load(std::memory_order_acquire) == kDeviceNamed) return true;
    if (spin > 64) ::sched_yield();
  }
  return false;
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
