// gpumem._native.PeakCounter: the library's exact, overlapping, resettable peak counter
// (gpumem/peak.hpp), for the readers that re-baseline and read every training step
// (gpumem.StepPeaks). A reading is one flat tuple: no dict is built on the per-step path. And the
// library's verdict on a figure against its budget (gpumem/budget.hpp), which the pytest plugin
// renders.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "bindings.hpp"
#include "gpumem/budget.hpp"
#include "gpumem/peak.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

// reset() must not race the same counter's read() (peak.hpp): calls from several Python threads
// are serialised here, with the GIL released first.
struct Counter {
  Counter(int device, Source source) : counter(device, source) {}
  std::mutex mutex;
  PeakCounter counter;
};

std::unique_ptr<Counter> make_counter(int device, const std::string& source) {
  const Source chosen = parse_source(source);
  py::gil_scoped_release unlocked;  // subscribing CUPTI or starting a sampler may block
  return std::make_unique<Counter>(device, chosen);
}

py::tuple as_tuple(const PeakReading& r) {
  return py::make_tuple(std::string(to_string(r.source)), std::string(to_string(r.quantity)),
                        r.covers, r.start_bytes, r.current_bytes, r.peak_bytes,
                        r.device_used_start_bytes, r.device_used_current_bytes,
                        r.device_used_peak_bytes);
}

}  // namespace

py::tuple coverage_names(std::uint32_t covers) {
  py::list names;
  for (std::uint32_t bit = 1; bit <= coverage::other_processes; bit <<= 1) {
    if ((covers & bit) != 0) names.append(describe_coverage(bit));
  }
  return py::tuple(names);
}

void bind_peak(py::module_& module) {
  py::class_<Counter>(module, "PeakCounter",
                      "gpumem::PeakCounter: one device's peak over a window that starts at "
                      "construction and at each reset(); gpumem.StepPeaks uses it.")
      .def(py::init(&make_counter), py::kw_only(), py::arg("device"),
           py::arg("source") = "automatic")
      .def("reset",
           [](Counter& self) {
             py::gil_scoped_release unlocked;
             const std::lock_guard lock(self.mutex);
             self.counter.reset();
           })
      .def(
          "read",
          [](Counter& self) {
            PeakReading reading;
            {
              py::gil_scoped_release unlocked;
              const std::lock_guard lock(self.mutex);
              reading = self.counter.read();
            }
            return as_tuple(reading);
          },
          "(source, quantity, covers bits, start, current, peak, device used at start, now and "
          "at its peak), bytes")
      .def_property_readonly(
          "source", [](Counter& self) { return std::string(to_string(self.counter.source())); })
      .def_property_readonly("device", [](Counter& self) { return self.counter.device(); });
  py::class_<PeakVerdict>(module, "PeakVerdict",
                          "gpumem::PeakVerdict: a figure against its budget (gpumem/budget.hpp)")
      .def_readonly("exceeded", &PeakVerdict::exceeded)
      .def_readonly("over_bytes", &PeakVerdict::over_bytes)
      .def_readonly("may_be_higher", &PeakVerdict::may_be_higher);
  module.def("judge_peak", &judge_peak, py::arg("peak_bytes"), py::arg("budget_bytes"),
             py::arg("exact"),
             "gpumem::judge_peak: the one verdict on a figure against its budget (exceeded, by "
             "how much, and whether the figure is a lower bound because it is not exact)");
  module.def("coverage_names", &coverage_names, py::arg("covers"),
             "The parts of a footprint that PeakReading::covers bits name, in words");
}

}  // namespace gpumem::python
