// The Python frame reader against interpreter structures laid out by hand with 3.11's layout:
// the frame chain innermost first, frames CPython has pushed but not started left out (a
// generator's kept), names read without calling CPython (ASCII in place, other text through its
// cached UTF-8), a thread with no Python state, the capacity. The layout itself is checked
// against CPython's own headers by python_layout_test.cpp, and the whole path on a real python3
// by tests/cli/run_python_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attribution/python_frames.hpp"

namespace {

using gpumem::attribution::PythonFrameView;
namespace python = gpumem::attribution::python;

const python::Layout& layout() {
  const python::Layout* layout = python::layout_for(0x030B);
  EXPECT_NE(layout, nullptr);
  return *layout;
}

// Memory laid out as the interpreter lays it out: each object a zeroed, aligned buffer.
struct Heap {
  std::vector<std::vector<std::uint64_t>> objects;
  char* object(std::size_t bytes) {
    objects.emplace_back(bytes / 8 + 16, 0);
    return reinterpret_cast<char*>(objects.back().data());
  }
  template <class T>
  static void put(char* base, std::size_t offset, T value) {
    std::memcpy(base + offset, &value, sizeof value);
  }
  // A compact str: ASCII text after its header, else the UTF-8 form cached (or not).
  char* text(const std::string& value, bool ascii = true, bool cached = true) {
    const python::Layout& l = layout();
    char* text = object(l.ascii_size + 32 + value.size() + 1);
    const std::uint32_t state = (1u << 5) | (ascii ? 1u << 6 : 0u) | (1u << 2);  // compact, kind 1
    put(text, l.text_state, state);
    if (ascii) {
      std::memcpy(text + l.ascii_size, value.c_str(), value.size() + 1);
    } else if (cached) {
      char* utf8 = object(value.size() + 1);
      std::memcpy(utf8, value.c_str(), value.size() + 1);
      put(text, l.compact_utf8, static_cast<const char*>(utf8));
    }
    return text;
  }
  char* code(char* name, char* file, int first_traceable = 0) {
    const python::Layout& l = layout();
    char* code = object(l.code_instructions + 256);
    put(code, l.code_name, static_cast<void*>(name));
    put(code, l.code_filename, static_cast<void*>(file));
    put(code, l.code_first_traceable, first_traceable);
    return code;
  }
  // A frame of `code` at byte `offset` of its instructions, called from `previous`.
  char* frame(char* code, std::ptrdiff_t offset, char* previous, char owner = 0) {
    const python::Layout& l = layout();
    char* frame = object(l.frame_owner + 8);
    put(frame, l.frame_code, static_cast<void*>(code));
    put(frame, l.frame_previous, static_cast<void*>(previous));
    put(frame, l.frame_instruction, static_cast<const char*>(code + l.code_instructions + offset));
    put(frame, l.frame_owner, owner);
    return frame;
  }
  // A thread state whose current frame is `innermost`.
  char* thread(char* innermost) {
    const python::Layout& l = layout();
    char* cframe = object(l.cframe_current + 8);
    put(cframe, l.cframe_current, static_cast<void*>(innermost));
    char* thread = object(l.thread_cframe + 8);
    put(thread, l.thread_cframe, static_cast<void*>(cframe));
    return thread;
  }
};

thread_local void* t_thread_state = nullptr;
void* this_thread_state() {
  return t_thread_state;
}
// Line 100 + the instruction's index: what CPython's line table would say, made visible.
int address_to_line(void*, int byte_offset) {
  return 100 + byte_offset / 2;
}

python::Interpreter interpreter() {
  return {&layout(), &this_thread_state, &address_to_line};
}

std::string text(const char* value) {
  return value == nullptr ? "(null)" : value;
}

TEST(PythonFrames, ReadsTheThreadsChainInnermostFirstWithFilesAndLines) {
  Heap heap;
  char* module =
      heap.frame(heap.code(heap.text("<module>"), heap.text("/srv/train.py")), 40, nullptr);
  char* load =
      heap.frame(heap.code(heap.text("load_weights"), heap.text("/srv/train.py")), 18, module);
  t_thread_state = heap.thread(load);
  PythonFrameView frames[8];
  const python::Interpreter reader = interpreter();
  ASSERT_EQ(python::read_frames(reader, frames, 8), 2u);
  EXPECT_EQ(text(frames[0].function), "load_weights");
  EXPECT_EQ(text(frames[0].file), "/srv/train.py");
  EXPECT_EQ(frames[0].line, 109);
  EXPECT_EQ(text(frames[1].function), "<module>");
  EXPECT_EQ(frames[1].line, 120);
  t_thread_state = nullptr;
}

TEST(PythonFrames, LeavesOutFramesPushedButNotStartedAndKeepsAGenerators) {
  Heap heap;
  char* module = heap.frame(heap.code(heap.text("<module>"), heap.text("a.py")), 10, nullptr);
  // A generator suspended before its first traceable instruction still counts; a function's
  // frame that has not reached it yet does not (CPython's _PyFrame_IsIncomplete).
  char* generator = heap.frame(heap.code(heap.text("batches"), heap.text("a.py"), 3), 0, module, 1);
  char* pushed = heap.frame(heap.code(heap.text("starting"), heap.text("a.py"), 3), 4, generator);
  t_thread_state = heap.thread(pushed);
  PythonFrameView frames[8];
  ASSERT_EQ(python::read_frames(interpreter(), frames, 8), 2u);
  EXPECT_EQ(text(frames[0].function), "batches");
  EXPECT_EQ(text(frames[1].function), "<module>");
  t_thread_state = nullptr;
}

TEST(PythonFrames, ReadsTextThatIsNotAsciiThroughItsCachedUtf8AndNothingElse) {
  Heap heap;
  char* outer =
      heap.frame(heap.code(heap.text("äußere", false, false), heap.text("b.py")), 2, nullptr);
  char* inner =
      heap.frame(heap.code(heap.text("grüße", false), heap.text("/tmp/ü.py", false)), 2, outer);
  t_thread_state = heap.thread(inner);
  PythonFrameView frames[8];
  ASSERT_EQ(python::read_frames(interpreter(), frames, 8), 2u);
  EXPECT_EQ(text(frames[0].function), "grüße");
  EXPECT_EQ(text(frames[0].file), "/tmp/ü.py");
  EXPECT_EQ(frames[1].function, nullptr);  // no UTF-8 form cached: not computed here
  EXPECT_EQ(text(frames[1].file), "b.py");
  t_thread_state = nullptr;
}

TEST(PythonFrames, AThreadWithoutAPythonStateHasNoFrames) {
  t_thread_state = nullptr;
  PythonFrameView frames[8];
  EXPECT_EQ(python::read_frames(interpreter(), frames, 8), 0u);
}

TEST(PythonFrames, StopsAtTheCapacity) {
  Heap heap;
  char* frame = nullptr;
  for (int depth = 0; depth < 10; ++depth)
    frame = heap.frame(heap.code(heap.text("f" + std::to_string(depth)), heap.text("c.py")),
                       2 * depth, frame);
  t_thread_state = heap.thread(frame);
  PythonFrameView frames[4];
  ASSERT_EQ(python::read_frames(interpreter(), frames, 4), 4u);
  EXPECT_EQ(text(frames[0].function), "f9");
  EXPECT_EQ(text(frames[3].function), "f6");
  t_thread_state = nullptr;
}

TEST(PythonFrames, KnowsOnlyTheLayoutsItWasGiven) {
  EXPECT_NE(python::layout_for(0x030B), nullptr);
  EXPECT_NE(python::layout_for(0x030C), nullptr);
  EXPECT_NE(python::layout_for(0x030D), nullptr);
  EXPECT_EQ(python::layout_for(0x030E), nullptr);
  EXPECT_EQ(python::layout_for(0x0308), nullptr);
  EXPECT_EQ(python::layout_for(0), nullptr);
}

}  // namespace
