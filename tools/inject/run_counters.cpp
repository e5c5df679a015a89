#include "run_counters.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

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
  for (int device = 0; device < kMaxDevices; ++device) {
    const std::int64_t held = slot.held[device].exchange(0, std::memory_order_relaxed);
    if (held != 0) counters.devices[device].current.fetch_sub(held, std::memory_order_relaxed);
  }
}

std::uint64_t own_pid_namespace() noexcept {
  struct stat info {};
  if (::stat("/proc/self/ns/pid", &info) != 0 || info.st_ino == 0) return kUnknownNamespace;
  return static_cast<std::uint64_t>(info.st_ino);
}

void record_attach(RunCounters& counters, std::int32_t pid, std::uint64_t pid_namespace, bool exact,
                   const std::string& reason) noexcept {
  const std::int32_t index = counters.record_count.fetch_add(1, std::memory_order_acq_rel);
  if (index < 0 || index >= kMaxRecords) return;
  AttachRecord& record = counters.records[index];
  const std::size_t length = std::min(reason.size(), sizeof record.reason - 1);
  std::memcpy(record.reason, reason.data(), length);
  record.reason[length] = '\0';
  record.pid.store(pid, std::memory_order_relaxed);
  record.pid_namespace.store(pid_namespace, std::memory_order_relaxed);
  record.state.store(exact ? kAttachedExact : kAttachedFallback, std::memory_order_release);
}

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

bool record_device_view(RunCounters& counters, std::string* error) {
  const std::string visible = env_or_empty("CUDA_VISIBLE_DEVICES");
  const std::string order = env_or_empty("CUDA_DEVICE_ORDER");
  if (visible.size() >= sizeof counters.visible_devices ||
      order.size() >= sizeof counters.device_order) {
    if (error != nullptr) {
      *error = visible.size() >= sizeof counters.visible_devices
                   ? "CUDA_VISIBLE_DEVICES is too long to share with the measured processes"
                   : "CUDA_DEVICE_ORDER is too long to share with the measured processes";
    }
    return false;
  }
  std::memcpy(counters.visible_devices, visible.c_str(), visible.size() + 1);
  std::memcpy(counters.device_order, order.c_str(), order.size() + 1);
  return true;
}

std::string device_view_mismatch(const RunCounters& counters) {
  const std::string visible = env_or_empty("CUDA_VISIBLE_DEVICES");
  const std::string order = env_or_empty("CUDA_DEVICE_ORDER");
  if (visible != counters.visible_devices) {
    return "CUDA_VISIBLE_DEVICES changed to '" + visible + "'";
  }
  if (order != counters.device_order) return "CUDA_DEVICE_ORDER changed to '" + order + "'";
  return {};
}

void unmap_run_counters(RunCounters* counters) {
  if (counters != nullptr) ::munmap(counters, sizeof(RunCounters));
}

}  // namespace gpumem::run
