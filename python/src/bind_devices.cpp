// Device identity and diagnostics.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "gpumem/device.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/diagnostics_log.hpp"
#include "gpumem/peak.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

py::dict as_dict(const DeviceInfo& info) {
  py::dict dict;
  dict["ordinal"] = info.ordinal;
  dict["nvml_index"] = info.nvml_index;
  dict["name"] = info.name;
  dict["uuid"] = info.uuid;
  dict["pci_bus_id"] = info.pci_bus_id;
  dict["total"] = info.memory.total;
  dict["free"] = info.memory.free;
  dict["used"] = info.memory.used;
  dict["reserved"] = info.memory.reserved;
  return dict;
}

}  // namespace

void bind_devices(py::module_& module) {
  using release = py::call_guard<py::gil_scoped_release>;
  module.def("device_count", &device_count, release());
  module.def("current_device_ordinal", &current_device_ordinal, release());
  module.def("devices", [] {
    std::vector<DeviceInfo> infos;
    {
      py::gil_scoped_release unlocked;
      infos = devices();
    }
    py::list list;
    for (const auto& info : infos) list.append(as_dict(info));
    return list;
  });
  module.def(
      "device_info",
      [](int id) -> py::object {
        std::optional<DeviceInfo> info;
        {
          py::gil_scoped_release unlocked;
          info = device_info(id);
        }
        if (!info) return py::none();
        return as_dict(*info);
      },
      py::arg("id") = current_device);
  module.def("driver_version", &driver_version, release());
  module.def("diagnostics", &diagnostics, release());
  module.def("last_diagnostic", &last_diagnostic, release());
  module.def("note_diagnostic", &support::record_diagnostic, py::arg("message"), release(),
             "Records a diagnostic (kept once) beside the core's own.");
  module.def("nvml_available", &nvml_available, release());
  module.def("cuda_available", &cuda_available, release());
  module.def("exact_source_status", &exact_source_status, release());
  module.def(
      "set_sampling_interval_ns",
      [](std::int64_t ns) { set_sampling_interval(std::chrono::nanoseconds(ns)); }, py::arg("ns"),
      release());
  module.def(
      "sampling_interval_ns", [] { return sampling_interval().count(); }, release());
}

}  // namespace gpumem::python
