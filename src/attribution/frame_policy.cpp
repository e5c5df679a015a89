// The one frame policy (seam attribution_frames.hpp): which frame of a stack is the user's
// allocating frame, what the views show of a stack, and how frames are named.
#include <algorithm>
#include <array>
#include <string_view>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"

namespace gpumem::detail::attribution {
namespace {

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view parent_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  return base_name(path.substr(0, slash));
}

bool python(const Frame& frame) {
  return frame.language == "python";
}

// Shared objects whose frames are never the user's, by the start of their file names: CUDA's
// libraries, gpumem's, ctypes' and libffi, CPython (the python3 executable, libpython), the C
// and C++ runtimes, PyTorch's allocator, operators and bindings (libc10_cuda, libc10,
// libtorch*), CUDA's math and communication libraries (cuBLAS, cuDNN, NCCL).
constexpr std::array kSkippedModules = {
    std::string_view("libcuda."),  std::string_view("libcudart."),
    std::string_view("libcupti."), std::string_view("libnvidia-"),
    std::string_view("libgpumem"), std::string_view("libffi."),
    std::string_view("_ctypes."),  std::string_view("libpython"),
    std::string_view("python"),    std::string_view("libstdc++."),
    std::string_view("ld-linux"),  std::string_view("libc10_cuda."),
    std::string_view("libc10."),   std::string_view("libtorch"),
    std::string_view("libcublas"), std::string_view("libcudnn"),
    std::string_view("libnccl"),
};

// Functions that are never the user's, by the start of their demangled names: gpumem's own
// (linked statically), pybind11's dispatch, CPython's evaluation loop and calls, PyTorch's CUDA
// allocator, the C runtime's entry.
constexpr std::array kSkippedFunctions = {
    std::string_view("gpumem::"),     std::string_view("pybind11::"),
    std::string_view("_PyEval_"),     std::string_view("PyEval_"),
    std::string_view("_PyObject_"),   std::string_view("PyObject_"),
    std::string_view("_PyFunction_"), std::string_view("cfunction_"),
    std::string_view("c10::cuda::"),  std::string_view("_start"),
    std::string_view("__libc_start"), std::string_view("ffi_call"),
};

// CuPy's memory pool and its runtime bindings: Cython modules named by their package's path.
constexpr std::array kSkippedPaths = {std::string_view("/cupy/cuda/"),
                                      std::string_view("/cupy_backends/")};

// gpumem's own Python package (gpumem.testing's allocate is where the simulated tests
// allocate, not who).
bool gpumem_python(const Frame& frame) {
  return frame.file && parent_name(*frame.file) == "gpumem";
}

// A Python frame of the standard library or an installed package (torch's module.py):
// the user's only where no other Python frame is.
bool package_python(const Frame& frame) {
  if (!frame.file) return false;
  const std::string_view file = *frame.file;
  return file.find("/site-packages/") != std::string_view::npos ||
         file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos || file.starts_with("<frozen ");
}

// The C library: never the allocating frame, and shown only between the user's frames (a
// callback from qsort), not outward of them (__libc_start_call_main, start_thread, clone3).
bool c_library(const Frame& frame) {
  if (!frame.module || python(frame)) return false;
  const std::string_view name = base_name(*frame.module);
  return name.starts_with("libc.so") || name.starts_with("libc-");
}

const Frame& at(const Document& document, std::size_t index) {
  static const Frame kNone;
  return index < document.frames.size() ? document.frames[index] : kNone;
}

}  // namespace

bool skipped_frame(const Frame& frame) {
  if (python(frame)) return gpumem_python(frame);
  if (frame.module) {
    const std::string_view name = base_name(*frame.module);
    for (const std::string_view prefix : kSkippedModules)
      if (name.starts_with(prefix)) return true;
    for (const std::string_view part : kSkippedPaths)
      if (frame.module->find(part) != std::string::npos) return true;
  }
  if (frame.function) {
    for (const std::string_view prefix : kSkippedFunctions)
      if (frame.function->starts_with(prefix)) return true;
  }
  return false;
}

std::optional<std::size_t> allocating_position(const Document& document,
                                               const std::vector<std::size_t>& stack) {
  if (stack.empty()) return std::nullopt;
  std::optional<std::size_t> package, native;
  for (std::size_t position = 0; position < stack.size(); ++position) {
    const Frame& frame = at(document, stack[position]);
    if (skipped_frame(frame) || c_library(frame)) continue;
    if (python(frame)) {
      if (!package_python(frame)) return position;
      if (!package) package = position;
    } else if (!native) {
      native = position;
    }
  }
  if (package) return package;
  if (native) return native;
  return 0;
}

std::vector<std::size_t> shown_stack(const Document& document,
                                     const std::vector<std::size_t>& stack) {
  const std::optional<std::size_t> first = allocating_position(document, stack);
  if (!first) return {};
  std::size_t outermost = *first;  // the outermost frame of the user's
  for (std::size_t position = *first + 1; position < stack.size(); ++position) {
    const Frame& frame = at(document, stack[position]);
    if (!skipped_frame(frame) && !c_library(frame)) outermost = position;
  }
  std::vector<std::size_t> shown{stack[*first]};
  for (std::size_t position = *first + 1; position <= outermost; ++position)
    if (!skipped_frame(at(document, stack[position]))) shown.push_back(stack[position]);
  return shown;
}

std::string stack_identity(const Document& document, const std::vector<std::size_t>& stack) {
  const std::vector<std::size_t> shown = shown_stack(document, stack);
  const bool any_python = std::any_of(
      shown.begin(), shown.end(), [&](std::size_t index) { return python(at(document, index)); });
  std::string key;
  for (const std::size_t index : shown) {
    const Frame& frame = at(document, index);
    if (any_python && !python(frame)) continue;
    key += frame.function ? *frame.function : "?" + frame.module.value_or("");
    key += '\x1f' + frame.file.value_or("") + '\x1e';
  }
  return key;
}

std::string frame_function(const Frame& frame) {
  if (frame.function) return *frame.function;
  if (frame.address) return *frame.address;
  return "??";
}

std::string frame_label(const Frame& frame) {
  if (frame.function) {
    if (!frame.file) return *frame.function;
    return *frame.function + " (" + *frame.file +
           (frame.line ? ":" + std::to_string(*frame.line) : std::string()) + ")";
  }
  std::string where = frame.module.value_or("");
  if (frame.address) where += (where.empty() ? "" : "+") + *frame.address;
  return where.empty() ? "??" : "?? (" + where + ")";
}

std::string short_function(std::string name, const std::string& ellipsis) {
  for (std::size_t clone;
       name.ends_with("]") && (clone = name.rfind(" [clone ")) != std::string::npos;)
    name.erase(clone);
  // Each outermost template argument list as "<…>" and parameter list as "(…)" ("()" stays, as
  // does "(anonymous namespace)"); "operator<", "operator<<" and "operator->" are names.
  std::string out;
  out.reserve(name.size());
  for (std::size_t at = 0; at < name.size(); ++at) {
    const char c = name[at];
    if (out.ends_with("operator") && (c == '<' || c == '>' || c == '-')) {
      out += c;
      while (at + 1 < name.size() &&
             (name[at + 1] == '<' || name[at + 1] == '=' || name[at + 1] == '>'))
        out += name[++at];
      continue;
    }
    if (c != '<' && c != '(') {
      out += c;
      continue;
    }
    const char close = c == '<' ? '>' : ')';
    std::size_t end = at;
    int depth = 0;
    for (; end < name.size(); ++end) {
      if (name[end] == c) ++depth;
      if (name[end] == close && --depth == 0) break;
    }
    if (end == name.size()) return name;  // not balanced: left as it is
    const std::string_view inside = std::string_view(name).substr(at + 1, end - at - 1);
    if (inside.empty() || inside == "anonymous namespace")
      out += name.substr(at, end - at + 1);
    else
      out += std::string(1, c) + ellipsis + close;
    at = end;
  }
  return out;
}

std::string short_frame_label(const Frame& frame, const std::string& ellipsis) {
  if (!frame.function) return frame_label(frame);
  std::string label = short_function(*frame.function, ellipsis);
  if (frame.file) {
    label += " (" + std::string(base_name(*frame.file));
    if (frame.line) label += ":" + std::to_string(*frame.line);
    label += ")";
  }
  return label;
}

}  // namespace gpumem::detail::attribution
