#include "attribution/stacks.hpp"

#include <dlfcn.h>
#include <unwind.h>

#include <algorithm>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "attribution/python_frames.hpp"
#include "gpumem/attribution.hpp"

namespace gpumem::attribution {
namespace {

struct Unwinding {
  std::uintptr_t* frames;
  std::size_t capacity;
  std::size_t count;
  bool skipped_self;
};

_Unwind_Reason_Code on_frame(_Unwind_Context* context, void* data) {
  auto& unwinding = *static_cast<Unwinding*>(data);
  const std::uintptr_t pc = _Unwind_GetIP(context);
  if (pc == 0) return _URC_END_OF_STACK;
  if (!unwinding.skipped_self) {  // capture_native's own frame
    unwinding.skipped_self = true;
    return _URC_NO_REASON;
  }
  if (unwinding.count == unwinding.capacity) return _URC_END_OF_STACK;
  unwinding.frames[unwinding.count++] = pc;
  return _URC_NO_REASON;
}

std::atomic<PythonFrameProvider> g_provider{nullptr};
// The process's interpreter, once prepare_unwinder has looked for it (nullptr: none).
std::atomic<const python::Interpreter*> g_interpreter{nullptr};

std::uint64_t mix(std::uint64_t hash, std::uint64_t value) noexcept {
  hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash;
}

std::uint64_t mix_text(std::uint64_t hash, const char* text) noexcept {
  if (text == nullptr) return mix(hash, 0);
  return mix(hash, std::hash<std::string_view>{}(std::string_view(text)));
}

struct Table {
  std::mutex mutex;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash;
  std::vector<Stack> stacks;  // id - 1
};

Table& table() noexcept {
  static Table* const instance = new Table;  // never destroyed: allocations may come at exit
  return *instance;
}

bool same(const Stack& stack, const std::uintptr_t* native, std::size_t native_count,
          const PythonFrameView* python, std::size_t python_count) noexcept {
  if (stack.native.size() != native_count || stack.python.size() != python_count) return false;
  if (native_count != 0 &&
      std::memcmp(stack.native.data(), native, native_count * sizeof(std::uintptr_t)) != 0) {
    return false;
  }
  for (std::size_t i = 0; i < python_count; ++i) {
    const InternedPythonFrame& kept = stack.python[i];
    if (kept.line != python[i].line ||
        kept.function != std::string_view(python[i].function ? python[i].function : "") ||
        kept.file != std::string_view(python[i].file ? python[i].file : "")) {
      return false;
    }
  }
  return true;
}

// libunwind's unw_backtrace, loaded privately (RTLD_LOCAL): linked, or loaded globally, its own
// _Unwind_RaiseException could take over the C++ exceptions of the whole program.
using UnwBacktrace = int (*)(void** frames, int capacity);

// libunwind's per-thread trace cache frees itself in the last round of a thread's TSD
// destructors, after ThreadSanitizer has finished the thread (a crash in TSan's runtime): a TSan
// build unwinds with the compiler's unwinder.
#if defined(__SANITIZE_THREAD__)
#define GPUMEM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUMEM_TSAN 1
#endif
#endif

UnwBacktrace libunwind_backtrace() noexcept {
#ifdef GPUMEM_TSAN
  return nullptr;
#endif
  static const UnwBacktrace backtrace = []() -> UnwBacktrace {
    void* library = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    return reinterpret_cast<UnwBacktrace>(::dlsym(library, "unw_backtrace"));
  }();
  return backtrace;
}

}  // namespace

bool prepare_unwinder() noexcept {
  g_interpreter.store(python::process_interpreter(), std::memory_order_release);
  return libunwind_backtrace() != nullptr;
}

[[gnu::noinline]] std::size_t capture_native(std::uintptr_t* frames,
                                             std::size_t capacity) noexcept {
  if (const UnwBacktrace backtrace = libunwind_backtrace()) {
    // One more than asked: the first is this function's own frame.
    void* raw[kMaxNativeFrames + 1];
    const int limit = static_cast<int>(std::min(capacity, kMaxNativeFrames) + 1);
    const int count = backtrace(raw, limit);
    std::size_t kept = 0;
    for (int i = 1; i < count; ++i) frames[kept++] = reinterpret_cast<std::uintptr_t>(raw[i]);
    return kept;
  }
  return capture_native_compiler(frames, capacity);
}

[[gnu::noinline]] std::size_t capture_native_compiler(std::uintptr_t* frames,
                                                      std::size_t capacity) noexcept {
  Unwinding unwinding{frames, capacity, 0, false};
  _Unwind_Backtrace(&on_frame, &unwinding);
  return unwinding.count;
}

std::uint32_t intern(const std::uintptr_t* native, std::size_t native_count,
                     const PythonFrameView* python, std::size_t python_count) noexcept {
  std::uint64_t hash = mix(0, native_count);
  for (std::size_t i = 0; i < native_count; ++i) hash = mix(hash, native[i]);
  for (std::size_t i = 0; i < python_count; ++i) {
    hash = mix_text(
        mix_text(mix(hash, static_cast<std::uint64_t>(python[i].line)), python[i].function),
        python[i].file);
  }
  Table& t = table();
  try {
    const std::lock_guard lock(t.mutex);
    const auto [first, last] = t.by_hash.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (same(t.stacks[it->second - 1], native, native_count, python, python_count)) {
        return it->second;
      }
    }
    Stack kept;
    kept.native.assign(native, native + native_count);
    kept.python.reserve(python_count);
    for (std::size_t i = 0; i < python_count; ++i) {
      kept.python.push_back({python[i].function ? python[i].function : "",
                             python[i].file ? python[i].file : "", python[i].line});
    }
    t.stacks.push_back(std::move(kept));
    const auto id = static_cast<std::uint32_t>(t.stacks.size());
    t.by_hash.emplace(hash, id);
    return id;
  } catch (...) {
    return 0;
  }
}

std::uint32_t capture_stack() noexcept {
  std::uintptr_t native[kMaxNativeFrames];
  const std::size_t native_count = capture_native(native, kMaxNativeFrames);
  PythonFrameView views[kMaxPythonFrames];
  std::size_t python_count = 0;
  // The thread's own frames, read where the interpreter's layout is known (GIL held or not);
  // else the Python package's provider (which needs the GIL).
  if (const python::Interpreter* interpreter = g_interpreter.load(std::memory_order_acquire))
    python_count = python::read_frames(*interpreter, views, kMaxPythonFrames);
  if (python_count == 0) {
    if (const PythonFrameProvider provider = g_provider.load(std::memory_order_acquire)) {
      PythonFrame python[kMaxPythonFrames];
      python_count = std::min(provider(python, kMaxPythonFrames), kMaxPythonFrames);
      for (std::size_t i = 0; i < python_count; ++i)
        views[i] = {python[i].function, python[i].file, python[i].line};
    }
  }
  return intern(native, native_count, views, python_count);
}

Stack stack(std::uint32_t id) {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  if (id == 0 || id > t.stacks.size()) return {};
  return t.stacks[id - 1];
}

std::size_t interned_stacks() noexcept {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  return t.stacks.size();
}

}  // namespace gpumem::attribution

namespace gpumem {

void set_python_frame_provider(PythonFrameProvider provider) noexcept {
  attribution::g_provider.store(provider, std::memory_order_release);
}

}  // namespace gpumem
