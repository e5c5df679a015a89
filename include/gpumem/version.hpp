#pragma once

#define GPUMEM_VERSION_STRING "0.1.0"

namespace gpumem {
inline constexpr const char* version = GPUMEM_VERSION_STRING;
}  // namespace gpumem
