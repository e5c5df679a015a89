#include "faults.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace gpumem::sim {
namespace {

std::optional<long> parse_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const long value = std::strtol(copy.c_str(), &end, 10);
  if (end == copy.c_str() || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace

Faults parse_faults(const char* text) {
  Faults faults;
  if (text == nullptr) return faults;
  std::string_view rest(text);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (entry.empty()) continue;
    const auto equals = entry.find('=');
    const std::string_view key = entry.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view{} : entry.substr(equals + 1);
    const auto number = parse_number(value);
    bool understood = true;
    if (key == "nvml_init" && number) {
      faults.nvml_init = static_cast<int>(*number);
    } else if (key == "cuda_init" && number) {
      faults.cuda_init = static_cast<int>(*number);
    } else if (key == "cuda_uuid" && number) {
      faults.cuda_uuid = static_cast<int>(*number);
    } else if (key == "nvml_memory" && value == "v1") {
      faults.nvml_memory_v1_only = true;
    } else if (key == "nvml_memory" && value == "v2") {
      faults.nvml_memory_v2_only = true;
    } else if (key == "cupti_busy" && value.empty()) {
      faults.cupti_busy = true;
    } else if (key == "memory_return_delay" && number && *number >= 0) {
      faults.memory_return_delay_us = *number;
    } else if (key == "nvml_process_delay" && number && *number >= 0) {
      faults.nvml_process_delay_us = *number;
    } else if (key == "lost" && number && *number >= 0) {
      faults.lost.push_back(static_cast<unsigned>(*number));
    } else {
      understood = false;
    }
    if (!understood) {
      std::fprintf(stderr, "gpumem-sim: ignoring unknown fault \"%.*s\" in GPUMEM_SIM_FAULTS\n",
                   static_cast<int>(entry.size()), entry.data());
    }
  }
  return faults;
}

const Faults& faults() {
  static const Faults parsed = parse_faults(std::getenv("GPUMEM_SIM_FAULTS"));
  return parsed;
}

}  // namespace gpumem::sim
