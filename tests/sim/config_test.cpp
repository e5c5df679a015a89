// The simulator's own parsing: config defaults and validation, faults, PCI ids, and the CUDA
// enumeration oracle (CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER).
#include <gtest/gtest.h>

#include "core/config.hpp"
#include "core/faults.hpp"
#include "core/pci.hpp"
#include "core/uuid.hpp"
#include "core/visible_devices.hpp"

namespace gpumem::sim {
namespace {

TEST(simConfig, DefaultIsTwoDevicesInNvmlOrder) {
  const Config config = default_config();
  ASSERT_EQ(config.devices.size(), 2u);
  EXPECT_EQ(config.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(config.devices[0].total_mib, 143771u);
  EXPECT_EQ(config.devices[0].reserved_mib, 542u);
  EXPECT_EQ(config.devices[0].context_mib, 500u);
  EXPECT_EQ(config.devices[1].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(config.devices[1].total_mib, 81920u);
  EXPECT_EQ(config.devices[1].reserved_mib, 474u);
  EXPECT_EQ(config.cuda_order, (std::vector<int>{0, 1}));
  EXPECT_EQ(config.process_record_bytes, 24u);
}

TEST(simConfig, FieldsDefaultFromPosition) {
  const Config config = parse_config(R"({"devices": [{"name": "A"}, {"name": "B"}]})");
  EXPECT_EQ(config.devices[1].uuid, "GPU-00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(config.devices[1].pci_bus_id, "00000000:20:00.0");
  EXPECT_EQ(config.devices[0].pci_bus_id, "00000000:10:00.0");
  EXPECT_EQ(config.devices[1].total_mib, 81920u);
  EXPECT_EQ(config.devices[1].reserved_mib, 0u);
  EXPECT_EQ(config.driver_version, "580.95.05");
  EXPECT_EQ(config.cuda_driver_version, 13000);
  EXPECT_EQ(config.cuda_order, (std::vector<int>{0, 1}));
}

TEST(simConfig, ReadsEveryField) {
  const Config config =
      parse_config(R"({"driver_version": "535.54.03", "cuda_driver_version": 12020,
    "process_record_bytes": 32, "cuda_order": [1, 0],
    "devices": [{"name": "X", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
                 "pci_bus_id": "00000000:3B:00.0", "total_mib": 1000, "reserved_mib": 10, "context_mib": 5},
                {"name": "Y"}]})");
  EXPECT_EQ(config.driver_version, "535.54.03");
  EXPECT_EQ(config.cuda_driver_version, 12020);
  EXPECT_EQ(config.process_record_bytes, 32u);
  EXPECT_EQ(config.cuda_order, (std::vector<int>{1, 0}));
  EXPECT_EQ(config.devices[0].total_mib, 1000u);
  EXPECT_EQ(config.devices[0].reserved_mib, 10u);
  EXPECT_EQ(config.devices[0].context_mib, 5u);
}

TEST(simConfig, RejectsBadInput) {
  EXPECT_THROW(parse_config("{not json"), std::runtime_error);
  EXPECT_THROW(parse_config(R"({"devices": 3})"), std::runtime_error);
  EXPECT_THROW(parse_config(R"({"process_record_bytes": 20, "devices": [{}]})"),
               std::runtime_error);
  EXPECT_THROW(parse_config(R"({"page_bytes": 3000, "devices": [{}]})"), std::runtime_error);
  EXPECT_EQ(parse_config(R"({"page_bytes": 4096, "devices": [{}]})").page_bytes, 4096u);
  EXPECT_THROW(parse_config(R"({"cuda_order": [0, 0], "devices": [{}, {}]})"), std::runtime_error);
  EXPECT_THROW(parse_config(R"({"devices": [{"uuid": "GPU-xyz"}]})"), std::runtime_error);
  EXPECT_THROW(parse_config(R"({"devices": [{"total_mib": 10, "reserved_mib": 20}]})"),
               std::runtime_error);
  EXPECT_THROW(parse_config("/nonexistent/config.json"), std::runtime_error);
  // A MIG instance needs a MIG UUID and a whole GPU for parent.
  const std::string mig = R"("uuid": "MIG-cccccccc-3333-4000-8000-000000000002")";
  EXPECT_THROW(parse_config(R"({"devices": [{}, {"parent": 0}]})"), std::runtime_error);
  EXPECT_THROW(parse_config(R"({"devices": [{}, {"parent": 5, )" + mig + "}]}"),
               std::runtime_error);
  EXPECT_THROW(parse_config(R"({"devices": [{"parent": 0, )" + mig + "}]}"), std::runtime_error);
  EXPECT_EQ(parse_config(R"({"devices": [{}, {"parent": 0, )" + mig + "}]}").devices[1].parent, 0);
}

TEST(simConfig, HashFollowsContent) {
  EXPECT_EQ(default_config().hash(), default_config().hash());
  Config other = default_config();
  other.devices[0].total_mib += 1;
  EXPECT_NE(other.hash(), default_config().hash());
}

TEST(simFaults, ParsesEveryFault) {
  const Faults f =
      parse_faults("nvml_init=18, cuda_init=34,nvml_memory=v1,cupti_busy,lost=1,lost=0,bogus");
  EXPECT_EQ(f.nvml_init, 18);
  EXPECT_EQ(f.cuda_init, 34);
  EXPECT_TRUE(f.nvml_memory_v1_only);
  EXPECT_FALSE(f.nvml_memory_v2_only);
  EXPECT_TRUE(f.cupti_busy);
  EXPECT_EQ(f.lost, (std::vector<unsigned>{1, 0}));
  EXPECT_EQ(f.memory_return_delay_us, 0);
  EXPECT_TRUE(parse_faults("nvml_memory=v2").nvml_memory_v2_only);
  EXPECT_FALSE(parse_faults(nullptr).cupti_busy);
  EXPECT_EQ(parse_faults("memory_return_delay=20000").memory_return_delay_us, 20000);
  EXPECT_EQ(parse_faults("memory_return_delay=-1").memory_return_delay_us, 0);
  EXPECT_EQ(parse_faults("nvml_process_delay=5000").nvml_process_delay_us, 5000);
  EXPECT_EQ(parse_faults("cuda_uuid=101").cuda_uuid, 101);
  EXPECT_FALSE(parse_faults("cuda_init=34").cuda_uuid);
}

TEST(simPci, ParsesEveryAcceptedForm) {
  const PciAddress expected{0, 0x19, 0, 0};
  EXPECT_EQ(parse_pci_bus_id("00000000:19:00.0"), expected);
  EXPECT_EQ(parse_pci_bus_id("0000:19:00.0"), expected);
  EXPECT_EQ(parse_pci_bus_id("0000:19:00"), expected);
  EXPECT_EQ(parse_pci_bus_id("19:00.0"), expected);
  EXPECT_EQ(parse_pci_bus_id("0000:3b:00.0"), (PciAddress{0, 0x3B, 0, 0}));
  EXPECT_FALSE(parse_pci_bus_id("zz:00.0"));
  EXPECT_FALSE(parse_pci_bus_id(""));
  EXPECT_EQ(nvml_bus_id({0, 0x3B, 0, 0}), "00000000:3B:00.0");
  EXPECT_EQ(cuda_bus_id({0, 0x3B, 0, 0}), "0000:3b:00.0");
  EXPECT_EQ(cuda_bus_id({0, 0x3B, 0, 0}).size(), 12u);
}

TEST(simUuid, RawBytes) {
  const auto bytes = parse_uuid_bytes("GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01");
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[0], 0x1b);
  EXPECT_EQ((*bytes)[1], 0x0a);
  EXPECT_EQ((*bytes)[15], 0x01);
  EXPECT_FALSE(parse_uuid_bytes("GPU-1234"));
}

// NVML 0 at bus 0x3B, NVML 1 at 0x19, NVML 2 at 0x5E; FASTEST_FIRST = [2, 0, 1].
class Enumeration : public ::testing::Test {
 protected:
  std::vector<int> enumerate(const char* order, const char* visible) {
    return cuda_enumeration(devices_, {2, 0, 1}, order, visible);
  }
  std::vector<EnumeratedDevice> devices_ = {
      {"GPU-aaaaaaaa-1111-4000-8000-000000000000", {0, 0x3B, 0, 0}},
      {"GPU-aabbbbbb-2222-4000-8000-000000000001", {0, 0x19, 0, 0}},
      {"MIG-cccccccc-3333-4000-8000-000000000002", {0, 0x5E, 0, 0}},
  };
};

// Suites carry "sim" in their names so that `ctest -R sim` selects them.
using simEnumeration = Enumeration;

TEST_F(simEnumeration, OrderWithoutFilter) {
  EXPECT_EQ(enumerate(nullptr, nullptr), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(enumerate("FASTEST_FIRST", nullptr), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", nullptr), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(enumerate("bogus", nullptr), (std::vector<int>{2, 0, 1}));
}

TEST_F(simEnumeration, IntegersIndexTheBaseOrder) {
  EXPECT_EQ(enumerate(nullptr, "1,0"), (std::vector<int>{0, 2}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", "1,0"), (std::vector<int>{0, 1}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", " 2 "), (std::vector<int>{2}));
}

TEST_F(simEnumeration, FirstInvalidEntryEndsTheList) {
  EXPECT_EQ(enumerate("PCI_BUS_ID", "0,2,-1,1"), (std::vector<int>{1, 2}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", "0,7,1"), (std::vector<int>{1}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", "1gpu2,0"), (std::vector<int>{0, 1}));
  EXPECT_EQ(enumerate("PCI_BUS_ID", "0,junk,1"), (std::vector<int>{1}));
}

TEST_F(simEnumeration, EmptyAndDuplicatesGiveNone) {
  EXPECT_TRUE(enumerate(nullptr, "").empty());
  EXPECT_TRUE(enumerate(nullptr, "0,1,0").empty());
  EXPECT_TRUE(enumerate(nullptr, "GPU-aaaaaaaa,GPU-aaaaaaaa-1111").empty());
}

TEST_F(simEnumeration, UuidPrefixes) {
  EXPECT_EQ(enumerate(nullptr, "GPU-aabb,GPU-aaaaaaaa"), (std::vector<int>{1, 0}));
  EXPECT_EQ(enumerate(nullptr, "MIG-cccc"), (std::vector<int>{2}));
  EXPECT_TRUE(enumerate(nullptr, "GPU-aa").empty());                          // ambiguous
  EXPECT_EQ(enumerate(nullptr, "GPU-aabb,GPU-ff,0"), (std::vector<int>{1}));  // unknown ends it
  EXPECT_EQ(enumerate(nullptr, "GPU-aaaaaaaa-1111-4000-8000-000000000000"), (std::vector<int>{0}));
  EXPECT_TRUE(enumerate(nullptr, "gpu-aabb").empty());
}

}  // namespace
}  // namespace gpumem::sim
