// A few environment variables as they were, with an O(1) "has anything changed?" test. getenv
// scans the whole environment with a string compare per entry, which would cost more than the
// NVML call a query makes; glibc's setenv/unsetenv/putenv instead always move pointers (a new
// string, shifted entries, an appended entry, a reallocated array), so comparing a handful of
// pointers (and the values' text, for putenv buffers edited in place) detects every change.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace gpumem::support {

class EnvSnapshot {
 public:
  static EnvSnapshot capture(std::initializer_list<const char*> names);

  // False when any captured variable may have been set, changed or unset since capture.
  bool unchanged() const noexcept {
    char** env = environ;
    if (env != base_) return false;  // clearenv, a reallocated array, or a replaced environ
    if (env == nullptr) return true;
    // setenv/putenv of a new name appends; unsetenv shifts the entries after the one it removes,
    // so the former last slot no longer holds the same pointer.
    if (env[count_] != nullptr) return false;
    if (count_ > 0 && env[count_ - 1] != last_) return false;
    // Out of line, and only where a captured variable was set: the loop and its strcmp would make
    // every inlined caller save registers for them.
    return !any_set_ || values_unchanged(env);
  }
  // The captured value of the i-th name, nullptr when it was unset.
  const char* value(std::size_t i) const noexcept;

 private:
  struct Variable {
    std::string name;
    std::ptrdiff_t index = -1;  // position in environ, -1 when unset
    const char* entry = nullptr;
    std::string value;
  };
  // The entries of the captured variables that were set: at their places, with their text.
  bool values_unchanged(char** env) const noexcept;

  char** base_ = nullptr;
  bool any_set_ = false;
  std::size_t count_ = 0;
  const char* last_ = nullptr;
  std::vector<Variable> variables_;
};

}  // namespace gpumem::support
