// Return addresses to functions, files and lines (elfutils' libdw, over this process's own
// mappings), demangled. Off the allocation path: only when a snapshot is materialized. Without
// libdw (libdw.hpp) a frame names its module and nearest exported symbol only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumem::attribution {

struct NativeFrame {
  std::optional<std::string> function;  // demangled
  std::optional<std::string> file;
  std::optional<int> line;
  std::optional<std::string> module;  // path of the object holding the address
  std::uintptr_t address = 0;
};

// `return_address`: the frame's saved return address (looked up one byte earlier, inside the
// call). Cached per address; thread-safe.
NativeFrame symbolize(std::uintptr_t return_address);
std::vector<NativeFrame> symbolize(const std::vector<std::uintptr_t>& return_addresses);

// Whether a frame is gpumem's own or a CUDA library's (left out of stacks).
bool is_tooling_frame(const NativeFrame& frame);
// Whether a frame is the Python interpreter's (where Python frames are put in).
bool is_interpreter_frame(const NativeFrame& frame);

// Forgets the cache (a benchmark measuring cold symbolization).
void forget_symbols();

}  // namespace gpumem::attribution
