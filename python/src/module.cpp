// gpumem._native: the C++ core for the gpumem Python package. Every call that may block
// (driver calls, cache-release hooks, the sampler's start/stop) runs without the GIL.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "gpumem/version.hpp"

PYBIND11_MODULE(_native, module) {
  module.doc() = "gpumem's native core (driver loading, queries, exact peaks, traces)";
  module.attr("version") = gpumem::version;
  gpumem::python::bind_queries(module);
  gpumem::python::bind_devices(module);
  gpumem::python::bind_cache(module);
  gpumem::python::bind_trace(module);
  gpumem::python::bind_allocate(module);
  gpumem::python::bind_attribution(module);
  gpumem::python::bind_byte_size(module);
  gpumem::python::bind_output(module);
  gpumem::python::bind_peak(module);
  gpumem::python::bind_run(module);
}
