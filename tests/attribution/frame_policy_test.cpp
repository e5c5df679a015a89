// The one frame policy (gpumem/internal/attribution_frames.hpp) on stacks laid out as captured:
// the user's Python frame over pybind11's, ctypes', the interpreter's and gpumem's; the user's
// native frame over CUDA's and PyTorch's allocator; what the views show; what matches across
// documents; long names shortened; Python's top_function() deciding the same.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"

namespace {

namespace model = gpumem::detail::attribution;

struct Stack {
  model::Document document;
  std::vector<std::size_t> frames;
  Stack& native(std::string function, std::string module) {
    model::Frame frame;
    frame.function = std::move(function);
    frame.module = std::move(module);
    frame.language = "native";
    return add(std::move(frame));
  }
  Stack& python(std::string function, std::string file, int line) {
    model::Frame frame;
    frame.function = std::move(function);
    frame.file = std::move(file);
    frame.line = line;
    frame.language = "python";
    return add(std::move(frame));
  }
  Stack& add(model::Frame frame) {
    frames.push_back(document.frames.size());
    document.frames.push_back(std::move(frame));
    return *this;
  }
  std::string allocating() const {
    const auto position = model::allocating_position(document, frames);
    return position ? model::frame_label(document.frames[frames[*position]]) : "(none)";
  }
  std::vector<std::string> shown() const {
    std::vector<std::string> names;
    for (const std::size_t frame : model::shown_stack(document, frames))
      names.push_back(model::frame_function(document.frames[frame]));
    return names;
  }
};

const std::string kBinding =
    "pybind11::cpp_function::initialize<gpumem::python::bind_allocate(pybind11::module_&)::"
    "{lambda(unsigned long, int)#1}, gpumem::DeviceAllocation, unsigned long, int, "
    "pybind11::name, pybind11::scope, pybind11::sibling, pybind11::arg, pybind11::arg_v, "
    "char [42]>(gpumem::python::bind_allocate(pybind11::module_&)::{lambda(unsigned long, int)#1}"
    "&&, gpumem::DeviceAllocation (*)(unsigned long, int), pybind11::name const&, "
    "pybind11::scope const&)::{lambda(pybind11::detail::function_call&)#3}::_FUN("
    "pybind11::detail::function_call&)";

// As captured in a Python program: the binding's frames inward of the Python frames, the
// interpreter's outward, gpumem's package among the Python frames.
Stack python_program() {
  Stack stack;
  stack.native(kBinding, "/usr/lib/python3/dist-packages/gpumem/_native.cpython-311.so")
      .native("pybind11::cpp_function::dispatcher(_object*, _object*, _object*)",
              "/usr/lib/python3/dist-packages/gpumem/_native.cpython-311.so")
      .native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8.1.2")
      .python("allocate", "/usr/lib/python3/dist-packages/gpumem/testing.py", 88)
      .python("_apply", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 820)
      .python("load_weights", "/srv/train.py", 12)
      .python("<module>", "/srv/train.py", 30)
      .native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11")
      .native("Py_RunMain", "/usr/bin/python3.11")
      .native("main", "/usr/bin/python3.11")
      .native("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6");
  return stack;
}

TEST(FramePolicy, TheUsersPythonFrameAllocatedNotTheBindingsOrAPackagesOrGpumems) {
  const Stack stack = python_program();
  EXPECT_EQ(stack.allocating(), "load_weights (/srv/train.py:12)");
  EXPECT_EQ(stack.shown(), (std::vector<std::string>{"load_weights", "<module>"}));
}

TEST(FramePolicy, APackagesPythonFrameOnlyWhereNoOtherIs) {
  Stack stack;
  stack.native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8")
      .python("_apply", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 820)
      .python("<module>", "/usr/lib/python3.11/runpy.py", 86)
      .native("main", "/usr/bin/python3.11");
  EXPECT_EQ(stack.allocating(),
            "_apply (/usr/lib/python3/dist-packages/torch/nn/modules/module.py:820)");
}

TEST(FramePolicy, TheUsersNativeFrameOverCudasAndPyTorchsAllocator) {
  Stack stack;
  stack.native("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12")
      .native(
          "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, "
          "unsigned long, CUstream_st*)",
          "/opt/torch/lib/libc10_cuda.so")
      .native("at::empty_cuda(c10::ArrayRef<long>)", "/opt/torch/lib/libtorch_cuda.so")
      .native("load_weights()", "/srv/train")
      .native("main", "/srv/train")
      .native("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6")
      .native("_start", "/srv/train");
  EXPECT_EQ(stack.allocating(), "load_weights()");
  EXPECT_EQ(stack.shown(), (std::vector<std::string>{"load_weights()", "main"}));
}

TEST(FramePolicy, EveryFrameSkippedLeavesTheInnermost) {
  Stack stack;
  stack.native("cuMemAlloc_v2", "/usr/lib/libcuda.so.1").native("ffi_call", "/usr/lib/libffi.so.8");
  EXPECT_EQ(stack.allocating(), "cuMemAlloc_v2");
  EXPECT_TRUE(model::allocating_position(stack.document, {}) == std::nullopt);
}

TEST(FramePolicy, APythonStackIsTheSameStackWhereALineMovedOrTheInterpreterWentAnotherWay) {
  Stack before = python_program();
  Stack after = python_program();
  after.document.frames[after.frames[5]].line = 15;  // load_weights' call moved down
  after.document.frames[after.frames[7]].function = "_PyEval_Vector";
  EXPECT_EQ(model::stack_identity(before.document, before.frames),
            model::stack_identity(after.document, after.frames));
  Stack other = python_program();
  other.document.frames[other.frames[5]].function = "load_optimizer";
  EXPECT_NE(model::stack_identity(before.document, before.frames),
            model::stack_identity(other.document, other.frames));
}

TEST(FramePolicy, LongNativeNamesAreShortenedOneWay) {
  EXPECT_EQ(model::short_function(kBinding, "…"),
            "pybind11::cpp_function::initialize<…>(…)::{lambda(…)#3}::_FUN(…)");
  EXPECT_EQ(model::short_function("std::vector<int, std::allocator<int> >::push_back(int&&)", "~"),
            "std::vector<~>::push_back(~)");
  EXPECT_EQ(model::short_function("operator<<(std::ostream&, Point const&)", "…"), "operator<<(…)");
  EXPECT_EQ(model::short_function("load_weights() [clone .isra.0]", "…"), "load_weights()");
  model::Frame frame;
  frame.function = "load_weights";
  frame.file = "/srv/train.py";
  frame.line = 12;
  EXPECT_EQ(model::short_frame_label(frame, "…"), "load_weights (train.py:12)");
}

TEST(FramePolicy, TopFunctionOfALibrarySnapshotDecidesTheSame) {
  const Stack stack = python_program();
  gpumem::AttributionSnapshot snapshot;
  for (const model::Frame& frame : stack.document.frames) {
    gpumem::StackFrame out;
    out.function = frame.function;
    out.file = frame.file;
    if (frame.line) out.line = static_cast<int>(*frame.line);
    out.module = frame.module;
    out.python = frame.language == "python";
    snapshot.frames.push_back(out);
  }
  snapshot.stacks.push_back(stack.frames);
  snapshot.blocks.push_back({0x7f0000000000, 768ull << 20, gpumem::BlockKind::device, 0, 0, 1});
  EXPECT_EQ(snapshot.top_function(), "load_weights");
  EXPECT_EQ(snapshot.allocating_frame(0), stack.frames[5]);
  EXPECT_EQ(snapshot.allocating_frame(1), std::nullopt);
}

}  // namespace
