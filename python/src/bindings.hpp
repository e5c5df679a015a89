// The pieces of the gpumem._native module, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace gpumem::python {

void bind_queries(pybind11::module_& module);
void bind_devices(pybind11::module_& module);
void bind_trace(pybind11::module_& module);
void bind_allocate(pybind11::module_& module);
void bind_cache(pybind11::module_& module);
void bind_attribution(pybind11::module_& module);
void bind_byte_size(pybind11::module_& module);
void bind_output(pybind11::module_& module);

}  // namespace gpumem::python
