// Per-process memory and cross-process visibility: memory a child allocates shows in this
// process's readings, whatever process-record layout the driver uses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "driver/nvml.hpp"
#include "gpumem/gpumem.hpp"
#include "identity/device_map.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

// A child that allocates `bytes` on ordinal `ordinal`, reports "ready", and holds the memory
// until told to go.
class AllocatingChild {
 public:
  AllocatingChild(std::size_t bytes, int ordinal) {
    int to_parent[2], to_child[2];
    if (::pipe(to_parent) != 0 || ::pipe(to_child) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(to_parent[0]);
      ::close(to_child[1]);
      DeviceAllocation block = device_allocate(bytes, ordinal);
      const char status = block.valid() ? 'y' : 'n';
      (void)!::write(to_parent[1], &status, 1);
      char go = 0;
      (void)!::read(to_child[0], &go, 1);
      block.reset();
      ::_exit(0);
    }
    ::close(to_parent[1]);
    ::close(to_child[0]);
    release_ = to_child[1];
    char status = 0;
    ready_ = ::read(to_parent[0], &status, 1) == 1 && status == 'y';
    ::close(to_parent[0]);
  }
  ~AllocatingChild() { finish(); }
  bool ready() const { return ready_; }
  unsigned pid() const { return static_cast<unsigned>(pid_); }
  int finish() {
    if (pid_ <= 0) return -1;
    const char go = 'g';
    (void)!::write(release_, &go, 1);
    ::close(release_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int release_ = -1;
  bool ready_ = false;
};

std::optional<ProcessMemory> find_process(const std::vector<ProcessMemory>& all, unsigned pid) {
  for (const ProcessMemory& p : all) {
    if (p.pid == pid) return p;
  }
  return std::nullopt;
}

TEST(CrossProcess, ChildAllocationVisibleInParent) {
  SimGpu sim;
  AllocatingChild child(256 * MiB, 0);
  ASSERT_TRUE(child.ready());
  EXPECT_EQ(gpu_mem_get(0),
            (GPUMemory{kH200Total, kH200Total - kH200Reserved - 256, kH200Reserved + 256}));
  EXPECT_EQ(gpu_mem_get(1).used, kA100Reserved);
  const auto processes = device_processes(0);
  const auto found = find_process(processes, child.pid());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->used_bytes, 256 * MiB);
  EXPECT_FALSE(find_process(processes, static_cast<unsigned>(::getpid())).has_value());
  EXPECT_TRUE(device_processes(1).empty());
  EXPECT_EQ(child.finish(), 0);
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved);
  EXPECT_TRUE(device_processes(0).empty());
}

TEST(CrossProcess, ChildAndParentBothListed) {
  SimGpu sim;
  DeviceAllocation mine = device_allocate(32 * MiB, 1);
  AllocatingChild child(64 * MiB, 1);
  ASSERT_TRUE(child.ready());
  EXPECT_EQ(gpu_mem_get(1).used, kA100Reserved + 96);
  const auto processes = device_processes(1);
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_EQ(find_process(processes, child.pid())->used_bytes, 64 * MiB);
  EXPECT_EQ(find_process(processes, static_cast<unsigned>(::getpid()))->used_bytes, 32 * MiB);
}

TEST(Processes, InvalidIdGivesNone) {
  SimGpu sim;
  EXPECT_TRUE(device_processes(9).empty());
  EXPECT_TRUE(device_processes(-9).empty());
}

// The legacy _v3 API whose record is 24 or 32 bytes depending on the driver: the stride is
// probed, never assumed.
class RecordStride : public ::testing::TestWithParam<int> {};

TEST_P(RecordStride, ProbedFromWhatTheDriverWrites) {
  SimGpu sim(with_record_bytes(GetParam()));
  DeviceAllocation mine = device_allocate(48 * MiB + 5, 0);
  AllocatingChild first(16 * MiB, 0), second(8 * MiB, 0);
  ASSERT_TRUE(first.ready() && second.ready());
  const identity::MappedDevice* device = identity::find_device(0);
  ASSERT_NE(device, nullptr);
  std::vector<driver::ProcessRecord> records;
  ASSERT_EQ(driver::legacy_processes(device->handle, records), abi::NVML_SUCCESS);
  EXPECT_EQ(driver::probed_process_stride(), static_cast<std::size_t>(GetParam()));
  ASSERT_EQ(records.size(), 3u);
  auto used_of = [&](unsigned pid) -> unsigned long long {
    for (const auto& r : records) {
      if (r.pid == pid) return r.used_bytes;
    }
    return 0;
  };
  EXPECT_EQ(used_of(static_cast<unsigned>(::getpid())), 48 * MiB + 5);
  EXPECT_EQ(used_of(first.pid()), 16 * MiB);
  EXPECT_EQ(used_of(second.pid()), 8 * MiB);
  // And the public API (the detail list, where present) agrees.
  const auto processes = device_processes(0);
  ASSERT_EQ(processes.size(), 3u);
  EXPECT_EQ(find_process(processes, first.pid())->used_bytes, 16 * MiB);
}

INSTANTIATE_TEST_SUITE_P(Strides, RecordStride, ::testing::Values(24, 32));

}  // namespace
}  // namespace gpumem
