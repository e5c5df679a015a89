#include "run_counters.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  } else if (counters->magic != kCountersMagic || counters->version != kCountersVersion) {
    ::munmap(memory, sizeof(RunCounters));
    errno = EINVAL;
    return fail("not a counters file:");
  }
  return counters;
}

void unmap_run_counters(RunCounters* counters) {
  if (counters != nullptr) ::munmap(counters, sizeof(RunCounters));
}

}  // namespace gpumem::run
