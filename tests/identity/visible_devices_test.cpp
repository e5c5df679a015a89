// The CUDA_VISIBLE_DEVICES parser on its own: every form, without any driver.
#include "identity/visible_devices.hpp"

#include <gtest/gtest.h>

namespace gpumem::identity {
namespace {

// NVML order: index 0 on bus 3B, index 1 on bus 19, index 2 on bus 5E.
std::vector<NvmlDeviceId> three_devices() {
  return {{0, "GPU-aaaaaaaa-1111-4000-8000-000000000000", "00000000:3B:00.0"},
          {1, "GPU-bbbbbbbb-2222-4000-8000-000000000001", "00000000:19:00.0"},
          {2, "MIG-cccccccc-3333-4000-8000-000000000002", "00000000:5E:00.0"}};
}

std::vector<unsigned> visible(const char* text) {
  return visible_nvml_indices(
      text == nullptr ? std::nullopt : std::optional<std::string_view>(text),
      base_order(three_devices()));
}

TEST(VisibleDevices, BaseOrderIsPciBusOrder) {
  const auto ordered = base_order(three_devices());
  ASSERT_EQ(ordered.size(), 3u);
  EXPECT_EQ(ordered[0].nvml_index, 1u);
  EXPECT_EQ(ordered[1].nvml_index, 0u);
  EXPECT_EQ(ordered[2].nvml_index, 2u);
}

TEST(VisibleDevices, UnknownBusIdsGoLast) {
  auto devices = three_devices();
  devices[1].pci_bus_id.clear();
  const auto ordered = base_order(devices);
  EXPECT_EQ(ordered[0].nvml_index, 0u);
  EXPECT_EQ(ordered[1].nvml_index, 2u);
  EXPECT_EQ(ordered[2].nvml_index, 1u);
}

TEST(VisibleDevices, UnsetMeansAllInBaseOrder) {
  EXPECT_EQ(visible(nullptr), (std::vector<unsigned>{1, 0, 2}));
}

TEST(VisibleDevices, EmptyMeansNone) {
  EXPECT_TRUE(visible("").empty());
  EXPECT_TRUE(visible("  ").empty());
}

TEST(VisibleDevices, IntegersIndexTheBaseOrder) {
  EXPECT_EQ(visible("1"), (std::vector<unsigned>{0}));
  EXPECT_EQ(visible("2,0"), (std::vector<unsigned>{2, 1}));
  EXPECT_EQ(visible(" 1 , 0 "), (std::vector<unsigned>{0, 1}));
}

TEST(VisibleDevices, IntegersParseLikeStrtoul) {
  EXPECT_EQ(visible("1gpu2,0ampere"), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(visible("+1"), (std::vector<unsigned>{0}));
}

TEST(VisibleDevices, FirstInvalidEntryEndsTheList) {
  EXPECT_EQ(visible("0,2,-1,1"), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(visible("0,7,1"), (std::vector<unsigned>{1}));
  EXPECT_EQ(visible("1,x,0"), (std::vector<unsigned>{0}));
  EXPECT_EQ(visible("1,,0"), (std::vector<unsigned>{0}));
  EXPECT_TRUE(visible("-1,0").empty());
  EXPECT_TRUE(visible("GPU-ffff").empty());
}

TEST(VisibleDevices, DuplicatesGiveNone) {
  EXPECT_TRUE(visible("0,0").empty());
  EXPECT_TRUE(visible("1,GPU-aaaa").empty());
  // A duplicate after the list ended does not count.
  EXPECT_EQ(visible("0,9,0"), (std::vector<unsigned>{1}));
}

TEST(VisibleDevices, UuidPrefixesMustBeUnique) {
  EXPECT_EQ(visible("GPU-bbbb"), (std::vector<unsigned>{1}));
  EXPECT_EQ(visible("GPU-aaaaaaaa-1111-4000-8000-000000000000,GPU-b"),
            (std::vector<unsigned>{0, 1}));
  EXPECT_TRUE(visible("GPU-").empty());  // matches two devices
  EXPECT_EQ(visible("GPU-a,GPU-,0"), (std::vector<unsigned>{0}));
}

TEST(VisibleDevices, MigEntries) {
  EXPECT_EQ(visible("MIG-cccc"), (std::vector<unsigned>{2}));
  EXPECT_EQ(visible("MIG-cccccccc-3333-4000-8000-000000000002,GPU-a"),
            (std::vector<unsigned>{2, 0}));
  EXPECT_TRUE(visible("MIG-aaaa").empty());  // a GPU UUID is not a MIG one
}

TEST(VisibleDevices, MixedFormsAndIntegersTogether) {
  EXPECT_EQ(visible("2,GPU-aaaa,0"), (std::vector<unsigned>{2, 0, 1}));
}

}  // namespace
}  // namespace gpumem::identity
