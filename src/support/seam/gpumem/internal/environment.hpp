// Reading environment variables the way every part of gpumem means them: a variable set to the
// empty string counts as unset (as `FOO= cmd` is commonly used to switch an override off).
// Header-only, so that the tools built on the library (through the gpumem_internal target) read
// the environment as it does, and nothing is exported.
#pragma once

#include <cstdlib>
#include <string>

namespace gpumem::support {

// The value of `name`, or nullptr when it is unset or empty. The pointer is getenv's: valid
// until the variable is next changed. Thread-safe as getenv is (not against a concurrent setenv).
inline const char* env_value(const char* name) noexcept {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// The value of `name` as text, empty when it is unset or empty.
inline std::string env_text(const char* name) {
  const char* value = env_value(name);
  return value != nullptr ? std::string(value) : std::string();
}

}  // namespace gpumem::support
