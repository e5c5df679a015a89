// Device memory through whatever libcuda gpumem loaded, for gpumem.testing.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>

#include "bindings.hpp"
#include "gpumem/allocate.hpp"
#include "gpumem/memory.hpp"

namespace py = pybind11;

namespace gpumem::python {

void bind_allocate(py::module_& module) {
  py::class_<DeviceAllocation>(module, "DeviceAllocation")
      .def_property_readonly("valid", &DeviceAllocation::valid)
      .def_property_readonly("address", &DeviceAllocation::address)
      .def_property_readonly("size", &DeviceAllocation::size)
      .def_property_readonly("device", &DeviceAllocation::device)
      .def("reset", &DeviceAllocation::reset, py::call_guard<py::gil_scoped_release>());
  module.def(
      "device_allocate",
      [](std::size_t bytes, int id) {
        // The GIL stays held, as a framework's allocator holds it: the allocation's Python
        // frames then show in attribution (the frame provider reads them only under the GIL).
        return std::make_unique<DeviceAllocation>(device_allocate(bytes, id));
      },
      py::arg("bytes"), py::arg("id") = current_device);
}

}  // namespace gpumem::python
