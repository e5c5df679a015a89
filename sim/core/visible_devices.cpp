#include "visible_devices.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

namespace gpumem::sim {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// strtoul-like: leading digits count, trailing garbage is ignored ("1gpu2" is 1).
std::optional<std::size_t> leading_integer(std::string_view text) {
  std::size_t value = 0, digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    value = value * 10 + static_cast<std::size_t>(text[digits] - '0');
    if (value > 1'000'000) return std::nullopt;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return value;
}

std::optional<int> by_uuid_prefix(const std::vector<EnumeratedDevice>& devices,
                                  const std::vector<int>& base, std::string_view prefix) {
  std::optional<int> found;
  for (int index : base) {
    if (!std::string_view(devices[static_cast<std::size_t>(index)].uuid).starts_with(prefix))
      continue;
    if (found) return std::nullopt;  // ambiguous
    found = index;
  }
  return found;
}

}  // namespace

std::vector<int> cuda_enumeration(const std::vector<EnumeratedDevice>& devices,
                                  const std::vector<int>& fastest_first, const char* order,
                                  const char* visible) {
  std::vector<int> base = fastest_first;
  if (order != nullptr && std::string_view(order) == "PCI_BUS_ID") {
    std::stable_sort(base.begin(), base.end(), [&](int a, int b) {
      return devices[static_cast<std::size_t>(a)].pci < devices[static_cast<std::size_t>(b)].pci;
    });
  }
  if (visible == nullptr) return base;

  std::vector<int> result;
  std::set<int> seen;
  std::string_view rest(visible);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    std::optional<int> index;
    if (entry.starts_with("GPU-") || entry.starts_with("MIG-")) {
      index = by_uuid_prefix(devices, base, entry);
    } else if (const auto position = leading_integer(entry); position && *position < base.size()) {
      index = base[*position];
    }
    if (!index) break;
    if (!seen.insert(*index).second) return {};
    result.push_back(*index);
    if (comma == std::string_view::npos) break;
  }
  return result;
}

}  // namespace gpumem::sim
