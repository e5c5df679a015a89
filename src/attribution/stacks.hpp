// Allocating call stacks: captured on the allocating thread as raw return addresses (and Python
// frames from the registered provider), interned as small ids. Nothing is symbolized here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpumem::attribution {

inline constexpr std::size_t kMaxNativeFrames = 64;
inline constexpr std::size_t kMaxPythonFrames = 64;

// The calling thread's return addresses, innermost first (this function's caller first); how
// many were written. libunwind's unw_backtrace (Debian's libunwind8, loaded privately: 0.2 us
// for 32 frames), else the compiler's _Unwind_Backtrace (10 us: it searches the unwind tables
// of every loaded object per frame; docs/peaks.md).
std::size_t capture_native(std::uintptr_t* frames, std::size_t capacity) noexcept;
std::size_t capture_native_compiler(std::uintptr_t* frames, std::size_t capacity) noexcept;
// Loads libunwind and looks for the Python interpreter now (at a counter's start) rather than
// in the first allocation's callback;
// false when it is not installed (the compiler's unwinder is used).
bool prepare_unwinder() noexcept;

struct InternedPythonFrame {
  std::string function;
  std::string file;
  int line = 0;
  friend bool operator==(const InternedPythonFrame&, const InternedPythonFrame&) = default;
};

struct Stack {
  std::vector<std::uintptr_t> native;       // innermost first
  std::vector<InternedPythonFrame> python;  // innermost first
};

struct PythonFrameView {
  const char* function;
  const char* file;
  int line;
};

// Captures the calling thread's stack (native, and Python when a provider is set) and returns
// its id (>= 1), the same id for the same stack; 0 if it could not be kept (out of memory).
std::uint32_t capture_stack() noexcept;
// The same from frames already captured.
std::uint32_t intern(const std::uintptr_t* native, std::size_t native_count,
                     const PythonFrameView* python, std::size_t python_count) noexcept;

// A copy of an interned stack (ids from capture_stack); empty for 0 or an unknown id.
Stack stack(std::uint32_t id);
std::size_t interned_stacks() noexcept;

}  // namespace gpumem::attribution
