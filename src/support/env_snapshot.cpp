#include "support/env_snapshot.hpp"

#include <unistd.h>

#include <cstring>

namespace gpumem::support {

EnvSnapshot EnvSnapshot::capture(std::initializer_list<const char*> names) {
  EnvSnapshot snapshot;
  for (const char* name : names) snapshot.variables_.push_back({name, -1, nullptr, {}});
  char** env = environ;
  snapshot.base_ = env;
  if (env == nullptr) return snapshot;
  std::size_t i = 0;
  for (; env[i] != nullptr; ++i) {
    for (Variable& variable : snapshot.variables_) {
      const std::size_t length = variable.name.size();
      // The first match wins, as with getenv.
      if (variable.index < 0 && std::strncmp(env[i], variable.name.c_str(), length) == 0 &&
          env[i][length] == '=') {
        variable.index = static_cast<std::ptrdiff_t>(i);
        variable.entry = env[i];
        variable.value = env[i] + length + 1;
      }
    }
  }
  for (const Variable& variable : snapshot.variables_) snapshot.any_set_ |= variable.index >= 0;
  snapshot.count_ = i;
  snapshot.last_ = i > 0 ? env[i - 1] : nullptr;
  return snapshot;
}

bool EnvSnapshot::values_unchanged(char** env) const noexcept {
  for (const Variable& variable : variables_) {
    if (variable.index < 0) continue;
    const char* entry = env[variable.index];
    if (entry != variable.entry) return false;  // replaced by setenv, or shifted by unsetenv
    if (std::strcmp(entry + variable.name.size() + 1, variable.value.c_str()) != 0) return false;
  }
  return true;
}

const char* EnvSnapshot::value(std::size_t i) const noexcept {
  if (i >= variables_.size() || variables_[i].index < 0) return nullptr;
  return variables_[i].value.c_str();
}

}  // namespace gpumem::support
