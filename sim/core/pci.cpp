#include "pci.hpp"

#include <cstdio>
#include <vector>

namespace gpumem::sim {
namespace {

std::optional<unsigned> parse_hex(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + static_cast<unsigned>(digit);
  }
  return value;
}

}  // namespace

std::optional<PciAddress> parse_pci_bus_id(std::string_view text) {
  std::string_view function_text;
  if (const auto dot = text.rfind('.'); dot != std::string_view::npos) {
    function_text = text.substr(dot + 1);
    text = text.substr(0, dot);
  }
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto colon = text.find(':', start);
    parts.push_back(text.substr(
        start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  PciAddress pci;
  std::optional<unsigned> domain = 0u, bus, device, function = 0u;
  if (parts.size() == 3) {
    domain = parse_hex(parts[0], 8);
    bus = parse_hex(parts[1], 2);
    device = parse_hex(parts[2], 2);
  } else if (parts.size() == 2 && !function_text.empty()) {
    bus = parse_hex(parts[0], 2);
    device = parse_hex(parts[1], 2);
  } else {
    return std::nullopt;
  }
  if (!function_text.empty()) function = parse_hex(function_text, 1);
  if (!domain || !bus || !device || !function) return std::nullopt;
  pci.domain = *domain;
  pci.bus = *bus;
  pci.device = *device;
  pci.function = *function;
  return pci;
}

std::string nvml_bus_id(const PciAddress& pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%08X:%02X:%02X.%X", pci.domain, pci.bus, pci.device,
                pci.function);
  return text;
}

std::string nvml_legacy_bus_id(const PciAddress& pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04X:%02X:%02X.%X", pci.domain & 0xFFFF, pci.bus, pci.device,
                pci.function);
  return text;
}

std::string cuda_bus_id(const PciAddress& pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", pci.domain & 0xFFFF, pci.bus, pci.device,
                pci.function);
  return text;
}

}  // namespace gpumem::sim
