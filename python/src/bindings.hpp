// The pieces of the gpumem._native module, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "gpumem/peak.hpp"

namespace gpumem::python {

void bind_queries(pybind11::module_& module);
void bind_devices(pybind11::module_& module);
void bind_trace(pybind11::module_& module);
void bind_allocate(pybind11::module_& module);
void bind_cache(pybind11::module_& module);
void bind_attribution(pybind11::module_& module);
void bind_byte_size(pybind11::module_& module);
void bind_output(pybind11::module_& module);
void bind_peak(pybind11::module_& module);
void bind_run(pybind11::module_& module);

// A source by its name ("automatic", "exact", …); ValueError for any other.
Source parse_source(const std::string& name);
// The names of the parts of a footprint that PeakReading::covers bits name, as a tuple.
pybind11::tuple coverage_names(std::uint32_t covers);

}  // namespace gpumem::python
