#include "python_stdout.hpp"

#include <pybind11/pybind11.h>

#include <Python.h>

#include <string>
#include <string_view>

namespace py = pybind11;

namespace gpumem::python {
namespace {

void write_line(std::string_view line) {
  if (Py_IsInitialized() == 0) return;
  py::gil_scoped_acquire locked;
  try {
    py::object out = py::module_::import("sys").attr("stdout");
    if (out.is_none()) return;  // pythonw and daemons run without a stdout
    std::string text(line);
    text += '\n';
    out.attr("write")(py::str(text));
  } catch (py::error_already_set& error) {
    // The native trace calls its sink from code that must not unwind through Python errors.
    error.discard_as_unraisable("gpumem report");
  }
}

}  // namespace

ReportSink python_stdout_sink() {
  return &write_line;
}

}  // namespace gpumem::python
