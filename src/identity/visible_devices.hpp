// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, interpreted without initialising CUDA: which NVML
// devices a CUDA program in this environment would see, in ordinal order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem::identity {

struct NvmlDeviceId {
  unsigned nvml_index = 0;  // a MIG instance has none of its own: there, a key of the caller's
  std::string uuid;         // "GPU-…" / "MIG-…", empty when NVML could not tell
  std::string pci_bus_id;   // "00000000:19:00.0", empty when NVML could not tell
};

// The devices in the order CUDA enumerates them before CUDA_VISIBLE_DEVICES applies. Only
// PCI_BUS_ID order can be known without CUDA; FASTEST_FIRST (the default) is approximated by it
// too, and the CUDA-initialised mapping replaces this one as soon as CUDA is up.
std::vector<NvmlDeviceId> base_order(std::vector<NvmlDeviceId> devices);

// The NVML indices visible to CUDA, in ordinal order. `text` is CUDA_VISIBLE_DEVICES (nullopt:
// unset, all of `ordered`). Entries are integers (positions in `ordered`, parsed like strtoul:
// "1gpu" is 1, a negative one ends the list) or unique prefixes of the "GPU-…"/"MIG-…" UUIDs of
// `ordered` and `mig_instances`; the first invalid entry ends the list, a device named twice
// gives none, and set but empty gives none.
std::vector<unsigned> visible_nvml_indices(std::optional<std::string_view> text,
                                           const std::vector<NvmlDeviceId>& ordered,
                                           const std::vector<NvmlDeviceId>& mig_instances = {});

}  // namespace gpumem::identity
