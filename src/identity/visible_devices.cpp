#include "identity/visible_devices.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace gpumem::identity {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// strtoul-like: an optional sign and the leading digits; nullopt for no digits or a negative.
std::optional<std::uint64_t> leading_integer(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  std::uint64_t value = 0;
  std::size_t digits = 0;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    if (value > (UINT64_MAX - 9) / 10) return std::nullopt;  // absurdly long: invalid
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    ++digits;
  }
  if (digits == 0 || (negative && value != 0)) return std::nullopt;
  return value;
}

bool is_uuid_entry(std::string_view entry) {
  return entry.starts_with("GPU-") || entry.starts_with("MIG-");
}

// The position in `ordered` of the only device whose UUID starts with `prefix`.
std::optional<std::size_t> unique_uuid_match(std::string_view prefix,
                                             const std::vector<NvmlDeviceId>& ordered) {
  std::optional<std::size_t> match;
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const std::string& uuid = ordered[i].uuid;
    if (uuid.size() < prefix.size()) continue;
    const bool same = std::equal(prefix.begin(), prefix.end(), uuid.begin(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) ==
             std::tolower(static_cast<unsigned char>(b));
    });
    if (!same) continue;
    if (match) return std::nullopt;  // ambiguous
    match = i;
  }
  return match;
}

}  // namespace

std::vector<NvmlDeviceId> base_order(std::vector<NvmlDeviceId> devices) {
  // Devices whose bus id is unknown (lost, say) keep their NVML order after the known ones.
  std::stable_sort(devices.begin(), devices.end(),
                   [](const NvmlDeviceId& a, const NvmlDeviceId& b) {
                     if (a.pci_bus_id.empty() != b.pci_bus_id.empty()) return b.pci_bus_id.empty();
                     std::string left = a.pci_bus_id, right = b.pci_bus_id;
                     for (char& c : left)
                       c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                     for (char& c : right)
                       c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                     return left < right;
                   });
  return devices;
}

std::vector<unsigned> visible_nvml_indices(std::optional<std::string_view> text,
                                           const std::vector<NvmlDeviceId>& ordered,
                                           const std::vector<NvmlDeviceId>& mig_instances) {
  std::vector<unsigned> visible;
  if (!text) {
    for (const NvmlDeviceId& device : ordered) visible.push_back(device.nvml_index);
    return visible;
  }
  std::string_view rest = *text;
  if (trim(rest).empty()) return visible;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    const NvmlDeviceId* named = nullptr;
    if (is_uuid_entry(entry)) {
      // GPU and MIG UUIDs differ in their prefix: at most one of the two lists can match.
      if (auto position = unique_uuid_match(entry, ordered)) {
        named = &ordered[*position];
      } else if (auto instance = unique_uuid_match(entry, mig_instances)) {
        named = &mig_instances[*instance];
      }
    } else if (auto number = leading_integer(entry); number && *number < ordered.size()) {
      named = &ordered[static_cast<std::size_t>(*number)];
    }
    if (named == nullptr) break;  // the first invalid entry ends the list
    const unsigned index = named->nvml_index;
    if (std::find(visible.begin(), visible.end(), index) != visible.end()) return {};
    visible.push_back(index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return visible;
}

}  // namespace gpumem::identity
