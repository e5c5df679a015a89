#include "shared_state.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "faults.hpp"
#include "liveness.hpp"

namespace gpumem::sim {
namespace {

constexpr std::uint64_t kMagic = 0x31534d454d555047ull;  // "GPUMEMS1"
constexpr std::uint32_t kLayoutVersion = 5;
constexpr std::uint32_t kClaiming = 0xFFFFFFFEu;
constexpr std::uint32_t kReclaiming = 0xFFFFFFFFu;
constexpr std::int64_t kReclaimIntervalNs = 5'000'000;

// The coarse clock (a jiffy, 1-4 ms) is enough to pace reclamation and costs a fraction of the
// precise one, which matters: memory queries are the baseline gpumem's benchmarks compare against.
std::int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec * 1'000'000'000ll + ts.tv_nsec;
}

bool live_pid(std::uint32_t pid) {
  return pid != 0 && pid != kClaiming && pid != kReclaiming;
}

// Who "the calling process" is; refreshed in a fork child.
struct Self {
  std::atomic<std::uint32_t> pid{0};
  std::atomic<std::uint64_t> start_time{0};
};
Self& self() {
  static Self s;
  static std::once_flag once;
  std::call_once(once, [] {
    s.pid = static_cast<std::uint32_t>(driver_pid());
    s.start_time = process_start_time(driver_pid());
  });
  return s;
}

void copy_text(char* out, std::size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(text.size(), size - 1));
}

void fill(StateFile& file, const Config& config) {
  file.layout_version = kLayoutVersion;
  file.config_hash = config.hash();
  copy_text(file.driver_version, sizeof file.driver_version, config.driver_version);
  file.cuda_driver_version = config.cuda_driver_version;
  file.process_record_bytes = config.process_record_bytes;
  file.page_bytes = config.page_bytes;
  file.nvml_pid_offset = config.nvml_pid_offset;
  file.device_count = static_cast<unsigned>(config.devices.size());
  for (unsigned i = 0; i < file.device_count; ++i) {
    const DeviceConfig& d = config.devices[i];
    DeviceRecord& record = file.devices[i];
    copy_text(record.name, sizeof record.name, d.name);
    copy_text(record.uuid, sizeof record.uuid, d.uuid);
    record.pci = *parse_pci_bus_id(d.pci_bus_id);
    record.total_bytes = d.total_mib * kMiB;
    record.reserved_bytes = d.reserved_mib * kMiB;
    record.context_bytes = d.context_mib * kMiB;
    record.parent = d.parent;
    file.cuda_order[i] = config.cuda_order[i];
  }
}

// Holds the file's exclusive lock and then closes it. The lock must be dropped explicitly: a
// mapping keeps the open file description (and so a flock) alive after close().
class LockedFile {
 public:
  explicit LockedFile(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~LockedFile() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

 private:
  int fd_;
};

// Opens (creating or recreating as needed) the state file and maps it.
StateFile* map_state(const std::string& path, bool force_reset, std::string* error) {
  std::optional<Config> configured;
  try {
    configured = config_from_environment();
  } catch (const std::exception& e) {
    *error = std::string("GPUMEM_SIM_CONFIG: ") + e.what();
    return nullptr;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot open the state file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  LockedFile lock(fd);
  struct stat info {};
  ::fstat(fd, &info);
  bool fresh = force_reset || static_cast<std::size_t>(info.st_size) != sizeof(StateFile);
  if (fresh) {
    // Truncating to zero first wipes stale contents: the file reads back as zeros.
    if (::ftruncate(fd, 0) != 0 || ::ftruncate(fd, sizeof(StateFile)) != 0) {
      *error = "cannot size the state file " + path + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  void* memory = ::mmap(nullptr, sizeof(StateFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    *error = "cannot map the state file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  auto* file = static_cast<StateFile*>(memory);
  const bool valid = file->magic.load(std::memory_order_acquire) == kMagic &&
                     file->layout_version == kLayoutVersion;
  const Config config = configured ? *configured : default_config();
  // Without GPUMEM_SIM_CONFIG an existing valid state is used as it is (a tool run from another
  // shell must not wipe the GPUs a test configured); with it, a different config is recreated.
  if (!fresh && valid && (!configured || file->config_hash == config.hash())) return file;
  if (!fresh) {
    file->magic.store(0);
    std::memset(static_cast<void*>(file), 0, sizeof(StateFile));
  }
  fill(*file, config);
  file->magic.store(kMagic, std::memory_order_release);
  return file;
}

struct Opened {
  SharedState* state = nullptr;
  std::string error;
};

}  // namespace

std::string state_path() {
  if (const char* path = std::getenv("GPUMEM_SIM_STATE"); path != nullptr && *path != '\0')
    return path;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return dir + "/gpumem-sim-" + std::to_string(::getuid()) + ".state";
}

// Opened once per library copy; the mapping lives until exit on purpose (other threads may read).
static Opened& opened() {
  static Opened* result = [] {
    auto* o = new Opened;
    const std::string path = state_path();
    if (StateFile* file = map_state(path, false, &o->error)) {
      o->state = new SharedState(path, file);
      for (unsigned index : faults().lost) {
        if (index < o->state->device_count()) o->state->set_lost(index, true);
      }
      ::pthread_atfork(nullptr, nullptr, [] {
        if (SharedState* s = opened().state) s->forget_self();
      });
    }
    return o;
  }();
  return *result;
}

SharedState* SharedState::get() noexcept {
  return opened().state;
}
const std::string& SharedState::open_error() noexcept {
  return opened().error;
}

bool SharedState::reset(std::string* error) noexcept {
  const std::string path = state_path();
  StateFile* file = map_state(path, true, error);
  if (file == nullptr) return false;
  ::munmap(file, sizeof(StateFile));
  return true;
}

void SharedState::forget_self() {
  Self& s = self();
  s.pid = static_cast<std::uint32_t>(driver_pid());
  s.start_time = process_start_time(driver_pid());
  for (auto& slot : own_slots_) slot.store(0);
  // The parent's watch is the parent's: this process learns the slots afresh.
  watch_.reset();
  for (auto& device : seen_) {
    for (std::uint32_t& pid : device) pid = 0;
  }
  watching_.store(false);
}

void SharedState::reclaim_dead(bool thorough) {
  last_reclaim_ns_.store(now_ns(), std::memory_order_relaxed);
  reclaim_dead_on(0, device_count(), thorough);
}

void SharedState::reclaim_dead_on(unsigned first, unsigned last, bool thorough) {
  // A process usually holds a slot on several devices: ask the kernel about each pid once.
  std::vector<std::pair<std::uint32_t, bool>> verdicts;
  const auto alive = [&](std::uint32_t pid, std::uint64_t start_time) {
    for (const auto& [known, verdict] : verdicts) {
      if (known == pid) return verdict;
    }
    const bool verdict = thorough ? process_alive(static_cast<pid_t>(pid), start_time)
                                  : process_exists(static_cast<pid_t>(pid));
    verdicts.emplace_back(pid, verdict);
    return verdict;
  };
  const std::uint32_t me = self().pid.load(std::memory_order_relaxed);
  for (unsigned d = first; d < last; ++d) {
    DeviceUsage& usage = file_->usage[d];
    for (UsageSlot& slot : usage.slots) {
      std::uint32_t pid = slot.pid.load(std::memory_order_acquire);
      if (!live_pid(pid) || pid == me) continue;
      if (alive(pid, slot.start_time.load())) continue;
      if (!slot.pid.compare_exchange_strong(pid, kReclaiming)) continue;
      usage.used.fetch_sub(slot.bytes.exchange(0));
      slot.start_time.store(0);
      slot.pid.store(0, std::memory_order_release);
    }
  }
}

void SharedState::maybe_reclaim() {
  const std::int64_t now = now_ns();
  std::int64_t last = last_reclaim_ns_.load(std::memory_order_relaxed);
  if (now - last < kReclaimIntervalNs) return;
  if (!last_reclaim_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  if (watching_.exchange(true, std::memory_order_acquire)) return;  // another thread is at it
  reclaim_exited(false);
  watching_.store(false, std::memory_order_release);
}

void SharedState::reclaim_exited(bool thorough) {
  if (!watch_.usable()) {
    reclaim_dead_on(0, device_count(), thorough);
    return;
  }
  std::vector<ExitWatch::Process> gone;
  try {
    // New holders: a slot's pid word that changed since the last look (word loads, no system
    // call). Each new process is watched from now on.
    const std::uint32_t me = self().pid.load(std::memory_order_relaxed);
    for (unsigned d = 0; d < device_count(); ++d) {
      for (unsigned i = 0; i < kMaxSlots; ++i) {
        UsageSlot& slot = file_->usage[d].slots[i];
        const std::uint32_t pid = slot.pid.load(std::memory_order_acquire);
        if (pid == seen_[d][i]) continue;
        const ExitWatch::Process process{static_cast<pid_t>(pid), slot.start_time.load()};
        if (!live_pid(pid) || pid == me || watch_.watching(process.pid)) {
          seen_[d][i] = pid;
          continue;
        }
        switch (watch_.watch(process)) {
          case ExitWatch::Watch::watched:
            seen_[d][i] = pid;
            break;
          case ExitWatch::Watch::gone:
            seen_[d][i] = pid;
            gone.push_back(process);
            break;
          case ExitWatch::Watch::unwatched:  // asked about the old way, and again next time
            if (thorough ? !process_alive(process.pid, process.start_time)
                         : !process_exists(process.pid)) {
              gone.push_back(process);
            }
            break;
        }
      }
    }
    // What the kernel says has exited since: one system call, however many are watched.
    watch_.exited(gone);
  } catch (...) {
    // No memory to note them: what was noted is reclaimed, the rest at the next look.
  }
  for (const ExitWatch::Process& process : gone) reclaim_process(process);
}

// Reclaims the slots of an exited process. A slot with its pid but another start time belongs
// to a process that reused the pid: it is looked at afresh next time.
void SharedState::reclaim_process(const ExitWatch::Process& process) {
  const auto pid = static_cast<std::uint32_t>(process.pid);
  for (unsigned d = 0; d < device_count(); ++d) {
    DeviceUsage& usage = file_->usage[d];
    for (unsigned i = 0; i < kMaxSlots; ++i) {
      UsageSlot& slot = usage.slots[i];
      std::uint32_t holder = slot.pid.load(std::memory_order_acquire);
      if (holder != pid) continue;
      if (process.start_time != 0 && slot.start_time.load() != process.start_time) {
        seen_[d][i] = 0;
        continue;
      }
      if (!slot.pid.compare_exchange_strong(holder, kReclaiming)) continue;
      usage.used.fetch_sub(slot.bytes.exchange(0));
      slot.start_time.store(0);
      slot.pid.store(0, std::memory_order_release);
    }
  }
}

MemoryNumbers SharedState::memory(unsigned index) {
  maybe_reclaim();
  const DeviceRecord& record = file_->devices[index];
  return {record.total_bytes, record.reserved_bytes,
          file_->usage[index].used.load(std::memory_order_relaxed)};
}

std::vector<ProcessUsage> SharedState::processes(unsigned index) {
  // As exact as asking about each process (a new holder is checked against its start time when
  // first watched, and an exited one, zombie or not, is reported by the kernel), without a
  // system call per process at every list: where the kernel can tell, and no other thread is
  // at it, reclaim_exited(); else each of the device's processes is asked about.
  if (!watching_.exchange(true, std::memory_order_acquire)) {
    const bool watched = watch_.usable();
    if (watched) reclaim_exited(true);
    watching_.store(false, std::memory_order_release);
    if (!watched) reclaim_dead_on(index, index + 1, true);
  } else {
    reclaim_dead_on(index, index + 1, true);
  }
  std::vector<ProcessUsage> result;
  for (const UsageSlot& slot : file_->usage[index].slots) {
    const std::uint32_t pid = slot.pid.load(std::memory_order_acquire);
    if (live_pid(pid)) result.push_back({pid, slot.bytes.load(std::memory_order_relaxed)});
  }
  return result;
}

int SharedState::own_slot(unsigned index, bool create) {
  if (const int cached = own_slots_[index].load(std::memory_order_acquire)) return cached - 1;
  if (!create) return -1;
  static std::mutex claiming;
  std::lock_guard lock(claiming);
  if (const int cached = own_slots_[index].load()) return cached - 1;
  const Self& me = self();
  DeviceUsage& usage = file_->usage[index];
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (unsigned i = 0; i < kMaxSlots; ++i) {
      UsageSlot& slot = usage.slots[i];
      std::uint32_t expected = 0;
      if (!slot.pid.compare_exchange_strong(expected, kClaiming)) continue;
      slot.bytes.store(0);
      slot.start_time.store(me.start_time.load());
      slot.pid.store(me.pid.load(), std::memory_order_release);
      own_slots_[index].store(static_cast<int>(i) + 1, std::memory_order_release);
      return static_cast<int>(i);
    }
    reclaim_dead();
  }
  return -1;
}

bool SharedState::charge(unsigned index, std::uint64_t bytes) {
  const int slot = own_slot(index, true);
  if (slot < 0) return false;
  DeviceUsage& usage = file_->usage[index];
  const DeviceRecord& record = file_->devices[index];
  const std::uint64_t capacity = record.total_bytes - record.reserved_bytes;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::uint64_t used = usage.used.load(std::memory_order_relaxed);
    while (bytes <= capacity - std::min(used, capacity)) {
      if (usage.used.compare_exchange_weak(used, used + bytes)) {
        usage.slots[slot].bytes.fetch_add(bytes);
        std::uint64_t peak = usage.used_peak.load(std::memory_order_relaxed);
        while (used + bytes > peak && !usage.used_peak.compare_exchange_weak(peak, used + bytes)) {
        }
        return true;
      }
    }
    reclaim_dead();  // a dead process may be holding what we need
  }
  return false;
}

void SharedState::uncharge(unsigned index, std::uint64_t bytes) {
  const int slot = own_slot(index, false);
  if (slot < 0) return;
  DeviceUsage& usage = file_->usage[index];
  usage.slots[slot].bytes.fetch_sub(bytes);
  usage.used.fetch_sub(bytes);
}

std::uint64_t SharedState::own_bytes(unsigned index) {
  const int slot = own_slot(index, false);
  return slot < 0 ? 0 : file_->usage[index].slots[slot].bytes.load(std::memory_order_relaxed);
}

void SharedState::leave(unsigned index) {
  const int slot = own_slot(index, false);
  if (slot < 0) return;
  DeviceUsage& usage = file_->usage[index];
  UsageSlot& s = usage.slots[slot];
  std::uint32_t pid = s.pid.load();
  own_slots_[index].store(0);
  if (pid != self().pid.load() || !s.pid.compare_exchange_strong(pid, kReclaiming)) return;
  usage.used.fetch_sub(s.bytes.exchange(0));
  s.start_time.store(0);
  s.pid.store(0, std::memory_order_release);
}

}  // namespace gpumem::sim
