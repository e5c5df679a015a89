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

// CPython 3.12 (LP64), from the same headers of 3.12: what moved since 3.11. The cframe's
// current frame first, the entry frames' shims (owned by the C stack) left out, str without its
// wstr pointer.
constexpr Layout kPython312 = [] {
  Layout layout = kPython311;
  layout.version = 0x030C;
  layout.cframe_current = 0;
  layout.frame_code = 0;
  layout.frame_previous = 8;
  layout.frame_owner = 70;
  layout.owned_by_c_stack = 3;
  layout.code_first_traceable = 176;
  layout.code_instructions = 192;
  layout.ascii_size = 40;
  layout.compact_utf8 = 48;
  return layout;
}();

// CPython 3.13 (LP64, the build with the GIL), from the same headers of 3.13: what moved since
// 3.12. The thread state holds its current frame, a frame its code object (f_executable) and next
// instruction.
constexpr Layout kPython313 = [] {
  Layout layout = kPython312;
  layout.version = 0x030D;
  layout.thread_cframe = 72;
  layout.frame_in_thread = true;
  layout.code_first_traceable = 184;
  layout.code_instructions = 200;
  return layout;
}();

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
  // An object's header as the layouts assume it (the type right after the reference count): a
  // build without the GIL (3.13t) has a larger one, and its structures are not read.
  const void* none = ::dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
  const void* none_type = ::dlsym(RTLD_DEFAULT, "_PyNone_Type");
  if (none == nullptr || none_type == nullptr || read<const void*>(none, 8) != none_type)
    return found;
  found.layout = layout;
  found.this_thread_state = reinterpret_cast<void* (*)()>(state);
  found.address_to_line = reinterpret_cast<int (*)(void*, int)>(line);
  return found;
}

}  // namespace

const Layout* layout_for(unsigned version) noexcept {
  for (const Layout* layout : {&kPython311, &kPython312, &kPython313})
    if (layout->version == version) return layout;
  return nullptr;
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
  const void* frame = read<const void*>(thread, layout.thread_cframe);
  if (!layout.frame_in_thread && frame != nullptr)
    frame = read<const void*>(frame, layout.cframe_current);
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
    const char owner = read<char>(frame, layout.frame_owner);
    if (owner == layout.owned_by_c_stack ||
        (owner != layout.owned_by_generator &&
         at < instructions + 2 * static_cast<std::ptrdiff_t>(first)))
      continue;
    out[count].function = text_of(layout, read<const void*>(code, layout.code_name));
    out[count].file = text_of(layout, read<const void*>(code, layout.code_filename));
    out[count].line = interpreter.address_to_line(code, static_cast<int>(at - instructions));
    ++count;
  }
  return count;
}

}  // namespace gpumem::attribution::python
