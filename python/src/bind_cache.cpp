// Cache-release hooks. The Python frameworks' caches (torch, CuPy) are emptied by one native hook
// that calls gpumem._framework.release_caches under the GIL. It holds no Python object, so the
// hook registry can outlive the interpreter at exit without touching freed Python state.
#include <pybind11/pybind11.h>

#include <Python.h>

#include "bindings.hpp"
#include "gpumem/cache.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

void release_python_caches() {
  if (Py_IsInitialized() == 0) return;
  py::gil_scoped_acquire locked;
  try {
    py::module_::import("gpumem._framework").attr("release_caches")();
  } catch (py::error_already_set& error) {
    // A framework failing to empty its cache must not stop the measurement that asked for it.
    error.discard_as_unraisable("gpumem cache-release hook");
  }
}

}  // namespace

void bind_cache(py::module_& module) {
  using release = py::call_guard<py::gil_scoped_release>;
  module.def(
      "add_framework_cache_hook", [] { return add_cache_release_hook(&release_python_caches); },
      release(), "Registers the hook that empties the Python frameworks' caches; returns its id.");
  module.def("remove_cache_release_hook", &remove_cache_release_hook, py::arg("hook_id"),
             release());
  module.def("release_caches", &release_caches, release());
}

}  // namespace gpumem::python
