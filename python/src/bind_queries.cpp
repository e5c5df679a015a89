// Memory queries: tuples of ints in, tuples of ints out; the Python layer builds namedtuples.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "gpumem/memory.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

// (total, free, used, reserved) MB: GPUMemory's three fields (used = total − free) and the
// driver's reservation, which the Python GPUMemory carries as an attribute.
using MemoryTuple = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
using BytesTuple = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;

MemoryTuple as_tuple(const GPUMemoryBytes& bytes) {
  const GPUMemory memory = to_mb(bytes);
  return {memory.total, memory.free, memory.used, static_cast<std::int64_t>(bytes.reserved >> 20)};
}

}  // namespace

void bind_queries(py::module_& module) {
  using release = py::call_guard<py::gil_scoped_release>;
  module.attr("current_device") = current_device;

  module.def(
      "gpu_mem_get",
      [](int id) -> std::optional<MemoryTuple> {
        const auto bytes = gpu_mem_get_bytes(id);
        if (!bytes) return std::nullopt;
        return as_tuple(*bytes);
      },
      py::arg("id") = current_device, release(),
      "(total, free, used, reserved) MB of CUDA ordinal `id`; None when unavailable.");
  module.def(
      "gpu_mem_get_bytes",
      [](int id) -> std::optional<BytesTuple> {
        auto bytes = gpu_mem_get_bytes(id);
        if (!bytes) return std::nullopt;
        return BytesTuple{bytes->total, bytes->free, bytes->used, bytes->reserved};
      },
      py::arg("id") = current_device, release(),
      "(total, free, used, reserved) bytes, or None when unavailable.");
  module.def(
      "gpu_mem_get_all",
      [] {
        std::vector<MemoryTuple> all;
        for (const auto& bytes : gpu_mem_get_all_bytes()) all.push_back(as_tuple(bytes));
        return all;
      },
      release());
  module.def(
      "gpu_with_max_free_mem",
      [] {
        auto best = gpu_with_max_free_mem();
        return std::make_tuple(best.device, best.free);
      },
      release());
  module.def("preload", &preload, release());

  py::class_<GpuHandle>(module, "GpuHandle",
                        "A GPU resolved once (``gpumem.gpu_handle(id)``), for repeated cheap\n"
                        "reads of its used MB with ``gpumem.gpu_mem_get_used_fast``. ``device``\n"
                        "is its CUDA ordinal; ``GpuHandle()`` is invalid and reads 0.\n\n"
                        "Example::\n\n"
                        "    >>> handle = gpumem.gpu_handle(\"cuda:1\")\n"
                        "    >>> handle.valid, handle.device\n"
                        "    (True, 1)\n"
                        "    >>> gpumem.GpuHandle()\n"
                        "    GpuHandle(invalid)\n")
      .def(py::init<>(), "An invalid handle: reads give 0.")
      .def_property_readonly("valid", &GpuHandle::valid)
      .def_property_readonly("device", &GpuHandle::device)
      .def("__bool__", &GpuHandle::valid)
      .def("__repr__", [](const GpuHandle& handle) {
        return handle.valid() ? "GpuHandle(device=" + std::to_string(handle.device()) + ")"
                              : std::string("GpuHandle(invalid)");
      });
  module.def("gpu_handle", &gpu_handle, py::arg("id") = current_device, release());
  module.def("gpu_mem_get_used_fast", &gpu_mem_get_used_fast, py::arg("handle"), release());
  module.def("gpu_mem_get_used_bytes_fast", &gpu_mem_get_used_bytes_fast, py::arg("handle"),
             release());
}

}  // namespace gpumem::python
