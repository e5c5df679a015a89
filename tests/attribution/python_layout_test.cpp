// The hand-written layout of the installed CPython against its own headers (the internal ones,
// as a debugger reads them): every offset the frame reader uses.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <gtest/gtest.h>
#include <internal/pycore_frame.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attribution/python_frames.hpp"

namespace {

namespace python = gpumem::attribution::python;

TEST(PythonLayout, EveryOffsetTheReaderUsesIsTheInstalledInterpretersOwn) {
  const python::Layout* layout = python::layout_for(PY_VERSION_HEX >> 16);
  ASSERT_NE(layout, nullptr) << "no layout for the installed CPython " << PY_VERSION;
#if PY_VERSION_HEX >= 0x030D0000
  EXPECT_TRUE(layout->frame_in_thread);
  EXPECT_EQ(layout->thread_cframe, offsetof(PyThreadState, current_frame));
  EXPECT_EQ(layout->frame_code, offsetof(_PyInterpreterFrame, f_executable));
  EXPECT_EQ(layout->frame_instruction, offsetof(_PyInterpreterFrame, instr_ptr));
#else
  EXPECT_FALSE(layout->frame_in_thread);
  EXPECT_EQ(layout->thread_cframe, offsetof(PyThreadState, cframe));
  EXPECT_EQ(layout->cframe_current, offsetof(_PyCFrame, current_frame));
  EXPECT_EQ(layout->frame_code, offsetof(_PyInterpreterFrame, f_code));
  EXPECT_EQ(layout->frame_instruction, offsetof(_PyInterpreterFrame, prev_instr));
#endif
  EXPECT_EQ(layout->frame_previous, offsetof(_PyInterpreterFrame, previous));
  EXPECT_EQ(layout->frame_owner, offsetof(_PyInterpreterFrame, owner));
  EXPECT_EQ(layout->owned_by_generator, FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030C0000
  EXPECT_EQ(layout->owned_by_c_stack, FRAME_OWNED_BY_CSTACK);
#endif
  EXPECT_EQ(layout->code_filename, offsetof(PyCodeObject, co_filename));
  EXPECT_EQ(layout->code_name, offsetof(PyCodeObject, co_name));
  EXPECT_EQ(layout->code_first_traceable, offsetof(PyCodeObject, _co_firsttraceable));
  EXPECT_EQ(layout->code_instructions, offsetof(PyCodeObject, co_code_adaptive));
  EXPECT_EQ(layout->ascii_size, sizeof(PyASCIIObject));
  EXPECT_EQ(layout->compact_utf8, offsetof(PyCompactUnicodeObject, utf8));
  EXPECT_EQ(layout->text_state, offsetof(PyASCIIObject, state));
  // The state's bits the reader tests: compact (5) and ascii (6).
  PyASCIIObject text{};
  text.state.compact = 1;
  text.state.ascii = 1;
  std::uint32_t state = 0;
  std::memcpy(&state, reinterpret_cast<const char*>(&text) + layout->text_state, sizeof state);
  EXPECT_EQ(state, (1u << 5) | (1u << 6));
}

}  // namespace
