// CUDA's device enumeration: CUDA_DEVICE_ORDER picks the base order, CUDA_VISIBLE_DEVICES filters
// and reorders it. Written independently of gpumem's own parser: this is the oracle it is tested
// against.
#pragma once

#include <string>
#include <vector>

#include "pci.hpp"

namespace gpumem::sim {

struct EnumeratedDevice {
  std::string uuid;  // "GPU-…" / "MIG-…"
  PciAddress pci;
};

// NVML indices of the CUDA ordinals 0, 1, … . `devices` are in NVML order; `fastest_first` is the
// FASTEST_FIRST order (NVML indices). `order`/`visible` are the variables' values, nullptr when
// unset.
//  - order "PCI_BUS_ID" sorts by bus id; anything else is FASTEST_FIRST.
//  - visible unset: every device; empty: none.
//  - integer entries index the base order (so they follow CUDA_DEVICE_ORDER, not nvidia-smi);
//    "GPU-"/"MIG-" entries are unique prefixes of a UUID.
//  - the first invalid entry (not a number, out of range, ambiguous or unknown UUID) ends the
//    list; a device named twice makes the list empty.
std::vector<int> cuda_enumeration(const std::vector<EnumeratedDevice>& devices,
                                  const std::vector<int>& fastest_first, const char* order,
                                  const char* visible);

}  // namespace gpumem::sim
