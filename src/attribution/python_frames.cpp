#include "attribution/python_frames.hpp"

#include <dlfcn.h>

#include <cstring>

namespace gpumem::attribution::python {
namespace {

// CPython 3.11 on x86-64 and aarch64 (LP64), from Include/cpython/pystate.h,
// Include/internal/pycore_frame.h, Include/cpython/code.h and Include/cpython/unicodeobject.h.
constexpr Layout kPython311{
    .version = 0x030B,
    .thread_cframe = 56,
    .cframe_current = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_instruction = 56,
    .frame_owner = 69,
    .owned_by_generator = 1,
    .code_filename = 112,
    .code_name = 120,
    .code_first_traceable = 168,
    .code_instructions = 184,
    .text_state = 32,
    .ascii_size = 48,
    .compact_utf8 = 56,
};

template <class T>
T read(const void* base, std::size_t offset) noexcept {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof value);
  return value;
}

// A str's UTF-8 text without calling CPython: a compact ASCII string holds it right after its
// header (NUL-terminated); another compact string only where its UTF-8 form was cached.
const char* text_of(const Layout& layout, const void* text) noexcept {
  if (text == nullptr) return nullptr;
  const auto state = read<std::uint32_t>(text, layout.text_state);
  const bool compact = (state >> 5) & 1u;
  const bool ascii = (state >> 6) & 1u;
  if (!compact) return nullptr;
  if (ascii) return static_cast<const char*>(text) + layout.ascii_size;
  return read<const char*>(text, layout.compact_utf8);
}

Interpreter find_interpreter() noexcept {
  Interpreter found;
  const auto* version = static_cast<const unsigned long*>(::dlsym(RTLD_DEFAULT, "Py_Version"));
  if (version == nullptr) return found;  // no interpreter, or one older than 3.11
  const Layout* layout = layout_for(static_cast<unsigned>(*version >> 16));
  auto* state = ::dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  auto* line = ::dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
  if (layout == nullptr || state == nullptr || line == nullptr) return found;
  found.layout = layout;
  found.this_thread_state = reinterpret_cast<void* (*)()>(state);
  found.address_to_line = reinterpret_cast<int (*)(void*, int)>(line);
  return found;
}

}  // namespace

const Layout* layout_for(unsigned version) noexcept {
  return version == kPython311.version ? &kPython311 : nullptr;
}

const Interpreter* process_interpreter() noexcept {
  static const Interpreter interpreter = find_interpreter();
  return interpreter.layout != nullptr ? &interpreter : nullptr;
}

std::size_t read_frames(const Interpreter& interpreter, PythonFrameView* out,
                        std::size_t capacity) noexcept {
  const Layout& layout = *interpreter.layout;
  void* thread = interpreter.this_thread_state();
  if (thread == nullptr) return 0;  // a thread CPython never ran
  const void* cframe = read<const void*>(thread, layout.thread_cframe);
  if (cframe == nullptr) return 0;
  const void* frame = read<const void*>(cframe, layout.cframe_current);
  std::size_t count = 0;
  for (; frame != nullptr && count < capacity;
       frame = read<const void*>(frame, layout.frame_previous)) {
    void* code = read<void*>(frame, layout.frame_code);
    if (code == nullptr) continue;
    const char* instructions = static_cast<const char*>(code) + layout.code_instructions;
    const auto* at = read<const char*>(frame, layout.frame_instruction);
    // A frame CPython has pushed but not yet started is not part of the stack (as
    // PyFrame_GetBack and tracebacks skip it).
    const auto first = read<int>(code, layout.code_first_traceable);
    if (read<char>(frame, layout.frame_owner) != layout.owned_by_generator &&
        at < instructions + 2 * static_cast<std::ptrdiff_t>(first))
      continue;
    out[count].function = text_of(layout, read<const void*>(code, layout.code_name));
    out[count].file = text_of(layout, read<const void*>(code, layout.code_filename));
    out[count].line = interpreter.address_to_line(code, static_cast<int>(at - instructions));
    ++count;
  }
  return count;
}

}  // namespace gpumem::attribution::python
