// PCI bus ids in the forms NVML and CUDA print and accept.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpumem::sim {

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  friend bool operator==(const PciAddress&, const PciAddress&) = default;
  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;
};

// "domain:bus:device.function", "domain:bus:device" or "bus:device.function", hex, any case —
// what nvmlDeviceGetHandleByPciBusId_v2 accepts (so CUDA's 13-char form works too).
std::optional<PciAddress> parse_pci_bus_id(std::string_view text);

std::string nvml_bus_id(const PciAddress& pci);         // "00000000:19:00.0"
std::string nvml_legacy_bus_id(const PciAddress& pci);  // "0000:19:00.0" (16-byte field)
std::string cuda_bus_id(const PciAddress& pci);         // "0000:19:00.0", as cuDeviceGetPCIBusId

}  // namespace gpumem::sim
