// Python frames with no import: the allocating thread's own Python frames, read from CPython's
// structures directly (docs/attribution.md, "Python frames"). The driver's callback runs on the
// allocating thread, which is blocked in the call: its frame chain cannot change meanwhile, also
// where it released the GIL around the call (ctypes, PyTorch's bindings). So nothing here takes
// the GIL, calls into Python code, allocates or locks: it reads the thread state that CPython
// keeps for the thread (PyGILState_GetThisThreadState, a thread-local read), walks its frames
// with the interpreter's layout, and asks PyCode_Addr2Line (a pure computation over the code
// object's line table) for each line.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attribution/stacks.hpp"

namespace gpumem::attribution::python {

// Where one CPython version keeps what the walk reads, in bytes from the start of each object
// (checked against the interpreter's own headers by tests/attribution where they are installed).
struct Layout {
  unsigned version = 0;                  // 0x030B for 3.11
  std::size_t thread_cframe = 0;         // PyThreadState::cframe (3.13: ::current_frame)
  bool frame_in_thread = false;          // 3.13: the thread state holds the current frame itself
  std::size_t cframe_current = 0;        // _PyCFrame::current_frame
  std::size_t frame_code = 0;            // _PyInterpreterFrame::f_code
  std::size_t frame_previous = 0;        // _PyInterpreterFrame::previous
  std::size_t frame_instruction = 0;     // _PyInterpreterFrame::prev_instr
  std::size_t frame_owner = 0;           // _PyInterpreterFrame::owner (a char)
  char owned_by_generator = 1;           // FRAME_OWNED_BY_GENERATOR
  char owned_by_c_stack = -1;            // FRAME_OWNED_BY_CSTACK (3.12: the entry's shim), or none
  std::size_t code_filename = 0;         // PyCodeObject::co_filename
  std::size_t code_name = 0;             // PyCodeObject::co_name
  std::size_t code_first_traceable = 0;  // PyCodeObject::_co_firsttraceable (an int)
  std::size_t code_instructions = 0;     // PyCodeObject::co_code_adaptive
  std::size_t text_state = 32;           // PyASCIIObject::state (a bit field)
  std::size_t ascii_size = 0;            // sizeof(PyASCIIObject): where ASCII text starts
  std::size_t compact_utf8 = 0;          // PyCompactUnicodeObject::utf8
};

// The layout of CPython `major.minor` (Py_Version >> 16), or nullptr where this gpumem does not
// know it (then no Python frames are read without the Python package's provider).
const Layout* layout_for(unsigned version) noexcept;

// An interpreter: its layout and the two functions the walk calls.
struct Interpreter {
  const Layout* layout = nullptr;
  void* (*this_thread_state)() = nullptr;                         // PyGILState_GetThisThreadState
  int (*address_to_line)(void* code, int byte_offset) = nullptr;  // PyCode_Addr2Line
};

// The interpreter of this process (the python3 executable or a libpython loaded globally),
// looked up once with dlsym; nullptr when there is none or its version is not known. Call it
// once before the first allocation callback (prepare_unwinder does), so that the lookup never
// happens inside one.
const Interpreter* process_interpreter() noexcept;

// The calling thread's Python frames, innermost first, as views into the interpreter's own
// strings (valid while the frames run); how many were written. 0 for a thread without a Python
// thread state. `interpreter` is process_interpreter()'s, or laid out by hand (tests).
std::size_t read_frames(const Interpreter& interpreter, PythonFrameView* out,
                        std::size_t capacity) noexcept;

}  // namespace gpumem::attribution::python
