// The one frame policy of every attribution view (docs/attribution.md, "The allocating frame"):
// which frame of a stack allocated, which frames the views show, what matches a stack across two
// documents, and how a frame is named in full and in a narrow column. The terminal table, the
// HTML report, the icicle, pprof, `gpumem diff` and the Python package all ask here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail::attribution {

// Whether a frame is never the user's: the allocator's, the runtime's, a binding's or the
// interpreter's (libcuda, libcudart, libcupti, PyTorch's c10 allocator and libtorch, cuBLAS,
// cuDNN, NCCL, CuPy's memory pool,
// ctypes and libffi, pybind11, CPython, the C++ runtime, the C runtime's entry) or gpumem's own
// (its libraries, its namespace, its Python package). The C library's frames are never the
// allocating frame either (below).
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) bool skipped_frame(const Frame& frame);

// The position in `stack` (innermost first) of the allocating frame: the innermost Python frame
// that is the user's where the stack has one (a Python frame of an installed package counts only
// where no other is the user's), else the innermost native frame that is not skipped, else the
// innermost frame; nullopt for an empty stack.
std::optional<std::size_t> allocating_position(const Document& document,
                                               const std::vector<std::size_t>& stack);

// What the views show of a stack, innermost first: the allocating frame and the frames outward
// of it that are not skipped (Python's callers, the user's native callers), the C library's only
// between the user's frames (a callback from qsort), never outward of them. Frame indices.
std::vector<std::size_t> shown_stack(const Document& document,
                                     const std::vector<std::size_t>& stack);

// What makes two stacks of two documents the same one: the shown frames' functions (or, not
// symbolized, their modules) and files, lines left out; a stack with Python frames by its Python
// frames alone, so that a moved line, or a different path through the interpreter, keeps it.
std::string stack_identity(const Document& document, const std::vector<std::size_t>& stack);

// A frame as people read it: "function (file:line)", or "?? (module+address)" when it was not
// symbolized. Raw text: escape it for where it goes.
std::string frame_label(const Frame& frame);
// Only the function's name, or the address / "??" when not symbolized.
std::string frame_function(const Frame& frame);
// A demangled function as a narrow column shows it: template arguments and the parameter list
// elided ("pybind11::cpp_function::initialize<…>(…)"), the compiler's clone suffixes
// (" [clone .isra.0]") left out.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string short_function(std::string name,
                                                                 const std::string& ellipsis);
// A frame in a narrow column: the function shortened, the file by its name alone, the line kept
// ("load_weights (train.py:12)").
std::string short_frame_label(const Frame& frame, const std::string& ellipsis);

// The library's frame as the document's model holds it.
Frame document_frame(const StackFrame& frame);

}  // namespace gpumem::detail::attribution

#pragma GCC visibility pop
