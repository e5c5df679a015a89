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
  dict["device"] = info.device;
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
  module.def("device_count", &device_count, release(),
             "The number of GPUs the program sees (CUDA_VISIBLE_DEVICES respected); 0 without a\n"
             "driver or GPU.\n\n"
             "Example (an H200 and an A100 visible)::\n\n"
             "    >>> gpumem.device_count()\n"
             "    2\n");
  module.def("active_device", &active_device, release());
  module.def(
      "devices",
      [] {
        std::vector<DeviceInfo> infos;
        {
          py::gil_scoped_release unlocked;
          infos = devices();
        }
        py::list list;
        for (const auto& info : infos) list.append(as_dict(info));
        return list;
      },
      "One dict per visible GPU, in CUDA ordinal order: ``device`` (the CUDA ordinal),\n"
      "``nvml_index``, ``name``, ``uuid``, ``pci_bus_id``, and ``total``, ``free``, ``used``\n"
      "and ``reserved`` in bytes (not MB: ``gpu_mem_get`` gives MB); ``[]`` without GPUs.\n\n"
      "Example (an H200 as ordinal 0, an A100 40GB as 1)::\n\n"
      "    >>> [(gpu['device'], gpu['name'], gpu['total'] // 2**20) for gpu in gpumem.devices()]\n"
      "    [(0, 'NVIDIA H200', 143771), (1, 'NVIDIA A100-SXM4-40GB', 40960)]\n");
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
  module.def("driver_version", &driver_version, release(),
             "The installed NVIDIA driver's version, as nvidia-smi shows it; '' without NVML.\n\n"
             "Example::\n\n"
             "    >>> gpumem.driver_version()\n"
             "    '580.95.05'\n");
  module.def(
      "diagnostics", &diagnostics, release(),
      "Why queries read zeros or a trace fell back to a lesser source: every distinct\n"
      "reason recorded in this process, oldest first, so the first is the first cause\n"
      "(without a driver: the CUDA driver's or NVML's library not found, before CUPTI's).\n"
      "GPUMemTrace's warning without a GPU names that first cause.\n\n"
      "Example::\n\n"
      "    >>> gpumem.gpu_mem_get(\"cpu\")\n"
      "    GPUMemory(total=0, free=0, used=0)\n"
      "    >>> \"GPU id 'cpu': not a CUDA device; zeros returned\" in gpumem.diagnostics()\n"
      "    True\n\n"
      "Without NVIDIA's driver it starts::\n\n"
      "    ['CUDA driver not found (libcuda.so.1: cannot open shared object file: ...)',\n"
      "     'NVML not found (libnvidia-ml.so.1: cannot open shared object file: ...)', ...]\n");
  module.def("last_diagnostic", &last_diagnostic, release(),
             "The newest of ``diagnostics()`` (a reason already recorded is not recorded\n"
             "again); '' when there is none.\n\n"
             "Example::\n\n"
             "    >>> gpumem.gpu_mem_get(7)\n"
             "    GPUMemory(total=0, free=0, used=0)\n"
             "    >>> gpumem.last_diagnostic()\n"
             "    'GPU id 7: no such device (2 visible); zeros returned'\n");
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
