// CUDA ordinal → NVML device under every CUDA_VISIBLE_DEVICES form and device order, read from
// the environment (CUDA unused) and from the driver (CUDA initialised), which must agree.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "driver/cuda.hpp"
#include "gpumem/gpumem.hpp"
#include "gpumem/internal/device_uuid.hpp"
#include "identity/device_map.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

// NVML indices of ordinals 0, 1, … .
std::vector<unsigned> mapped() {
  std::vector<unsigned> indices;
  for (const DeviceInfo& info : devices()) indices.push_back(info.nvml_index);
  return indices;
}

void initialise_cuda() {
  // device_allocate initialises CUDA like any CUDA program would; the block is freed at once.
  DeviceAllocation block = device_allocate(MiB, 0);
  (void)block;
}

struct VisibleCase {
  const char* visible;         // nullptr: unset
  std::vector<unsigned> nvml;  // expected NVML indices of ordinals 0, 1, …
};

class VisibleDevicesForms : public ::testing::TestWithParam<std::tuple<VisibleCase, bool>> {};

TEST_P(VisibleDevicesForms, MapsOrdinalsToTheRightBoards) {
  const auto& [form, with_cuda] = GetParam();
  SimGpu sim;
  if (form.visible != nullptr) {
    ::setenv("CUDA_VISIBLE_DEVICES", form.visible, 1);
  } else {
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  if (with_cuda) {
    initialise_cuda();
    if (!form.nvml.empty()) {
      EXPECT_EQ(driver::cuda_initialized(), true);
    }
  } else {
    EXPECT_EQ(driver::cuda_initialized(), false);
  }
  EXPECT_EQ(mapped(), form.nvml);
  EXPECT_EQ(device_count(), static_cast<int>(form.nvml.size()));
  // The numbers follow the mapping: the A100 (NVML 0) has 40960 MiB, the H200 (NVML 1) 143771.
  for (std::size_t ordinal = 0; ordinal < form.nvml.size(); ++ordinal) {
    const std::int64_t expected = form.nvml[ordinal] == 0 ? kA100Total : kH200Total;
    EXPECT_EQ(gpu_mem_get(static_cast<int>(ordinal)).total, expected) << "ordinal " << ordinal;
  }
  EXPECT_EQ(gpu_mem_get(static_cast<int>(form.nvml.size())), GPUMemory{});
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

// kTwoGpus: CUDA (and PCI) order is [NVML 1 (H200, bus 19), NVML 0 (A100, bus 3B)].
const VisibleCase kForms[] = {
    {nullptr, {1, 0}},
    {"", {}},
    {"0", {1}},
    {"1", {0}},
    {"1,0", {0, 1}},
    {"1gpu,0x", {0, 1}},
    {"0,2,1", {1}},
    {"1,-1,0", {0}},
    {"0,0", {}},
    {"0,GPU-bbbb", {}},
    {"GPU-aaaa", {0}},
    {"GPU-bbbbbbbb-2222-4000-8000-000000000001,GPU-aaaaaaaa", {1, 0}},
    {"GPU-", {}},
    {"GPU-ffff,0", {}},
    {"GPU-aaaa,GPU-cccc,0", {0}},
};

INSTANTIATE_TEST_SUITE_P(Forms, VisibleDevicesForms,
                         ::testing::Combine(::testing::ValuesIn(kForms), ::testing::Bool()));

class MigForms : public ::testing::TestWithParam<bool> {};

TEST_P(MigForms, MigUuidsMapToTheInstance) {
  SimGpu sim(kMig);
  ::setenv("CUDA_VISIBLE_DEVICES", "MIG-cccc", 1);
  if (GetParam()) initialise_cuda();
  const auto all = devices();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].nvml_index, 0u);  // its index within its GPU, as NVML gives it
  EXPECT_EQ(all[0].uuid, "MIG-cccccccc-3333-4000-8000-000000000002");
  EXPECT_EQ(gpu_mem_get(0).total, 40192);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

// What a scheduler sets for a job on a MIG slice (full UUIDs, maybe beside a whole GPU), read
// before CUDA starts: NVML enumerates the instance only under its GPU.
TEST(DeviceMap, AUuidIsWrittenAsNvmlWritesItByTheDriversOneWriter) {
  const char bytes[16] = {'\xbb', '\xbb', '\xbb', '\xbb', '\x22', '\x22', '\x40', '\x00',
                          '\x80', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00', '\x01'};
  EXPECT_EQ(identity::format_uuid("GPU-", bytes), "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(identity::format_uuid("MIG-", bytes), "MIG-bbbbbbbb-2222-4000-8000-000000000001");
  std::array<unsigned char, 16> raw{};
  std::memcpy(raw.data(), bytes, raw.size());
  EXPECT_EQ(driver::uuid_text(raw), "bbbbbbbb-2222-4000-8000-000000000001");
}

TEST(MigSlices, FullUuidsBesideAWholeGpuWithoutCuda) {
  SimGpu sim(kMig);
  ::setenv("CUDA_VISIBLE_DEVICES",
           "GPU-dddddddd-4444-4000-8000-000000000003,MIG-cccccccc-3333-4000-8000-000000000002", 1);
  ASSERT_EQ(device_count(), 2);
  EXPECT_EQ(gpu_mem_get(0).total, 81559);
  EXPECT_EQ(gpu_mem_get(1).total, 40192);
  // Integers index the GPUs alone: 1 is the H100, not the instance.
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  ASSERT_EQ(device_count(), 1);
  EXPECT_EQ(gpu_mem_get(0).total, 81559);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(device_count(), 2);  // the two GPUs
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutCuda, MigForms, ::testing::Bool());

TEST(DeviceOrder, PciBusIdOrderWithoutCuda) {
  SimGpu sim(kFastestFirstDiffers);
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  EXPECT_EQ(mapped(), (std::vector<unsigned>{0, 1}));
  initialise_cuda();
  EXPECT_EQ(mapped(), (std::vector<unsigned>{0, 1}));  // the driver agrees
  ::unsetenv("CUDA_DEVICE_ORDER");
}

TEST(DeviceOrder, FastestFirstBecomesExactOnceCudaIsInitialised) {
  SimGpu sim(kFastestFirstDiffers);
  ::unsetenv("CUDA_DEVICE_ORDER");
  // Without CUDA only the PCI order can be known…
  EXPECT_EQ(mapped(), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(gpu_mem_get(0).total, 15360);
  // …and once CUDA is up the mapping is refreshed from the driver's own enumeration.
  initialise_cuda();
  EXPECT_EQ(mapped(), (std::vector<unsigned>{1, 0}));
  EXPECT_EQ(gpu_mem_get(0).total, 81559);
}

TEST(DeviceOrder, UuidFormsAreExactInAnyOrder) {
  SimGpu sim(kFastestFirstDiffers);
  ::setenv("CUDA_VISIBLE_DEVICES", "GPU-2222,GPU-1111", 1);
  EXPECT_EQ(mapped(), (std::vector<unsigned>{1, 0}));
  initialise_cuda();
  EXPECT_EQ(mapped(), (std::vector<unsigned>{1, 0}));
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(Refresh, FollowsTheEnvironmentUntilCudaStarts) {
  SimGpu sim;
  EXPECT_EQ(device_count(), 2);
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(gpu_mem_get(0).total, kA100Total);
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  EXPECT_EQ(gpu_mem_get(0).total, kA100Total);
  ::setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  initialise_cuda();
  // CUDA read the variables at cuInit: later changes cannot change what its ordinals mean.
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("CUDA_DEVICE_ORDER");
}

TEST(Refresh, HandleStaysValidAcrossRefreshes) {
  SimGpu sim;
  const GpuHandle handle = gpu_handle(1);
  ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  EXPECT_EQ(device_count(), 1);
  DeviceAllocation block = device_allocate(8 * MiB, 0);     // the H200 (ordinal 0 under "0")
  EXPECT_EQ(gpu_mem_get_used_fast(handle), kA100Reserved);  // the handle is still the A100
  EXPECT_EQ(gpu_mem_get_used_bytes_fast(handle), std::optional<std::uint64_t>{0});
  EXPECT_EQ(gpu_mem_get(0).used, kH200Reserved + 8);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(Refresh, UnrelatedEnvironmentChangesKeepTheMap) {
  SimGpu sim;
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  const identity::DeviceMap* before = &identity::device_map();
  for (int i = 0; i < 20; ++i) {
    // A new variable each time, then the last one rewritten: both fail the fast check.
    ::setenv(("GPUMEM_TEST_UNRELATED_" + std::to_string(i)).c_str(), "1", 1);
    ::setenv(("GPUMEM_TEST_UNRELATED_" + std::to_string(i)).c_str(), "2", 1);
    EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
    EXPECT_EQ(&identity::device_map(), before);
  }
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);  // a real change still rebuilds
  EXPECT_EQ(gpu_mem_get(0).total, kA100Total);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  for (int i = 0; i < 20; ++i) ::unsetenv(("GPUMEM_TEST_UNRELATED_" + std::to_string(i)).c_str());
}

TEST(CurrentDevice, ZeroWhenCudaUnused) {
  SimGpu sim;
  ::setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
  EXPECT_EQ(active_device(), 0);
  EXPECT_EQ(gpu_mem_get().total, kA100Total);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace gpumem
