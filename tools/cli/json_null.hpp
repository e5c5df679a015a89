// An optional value as JSON: the value, or null when there is none: how `gpumem diff`'s JSON
// (gpumem.diff/1) spells "absent" (the run and report documents are the library's writers').
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace gpumem::cli {

template <typename T>
nlohmann::ordered_json json_or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace gpumem::cli
