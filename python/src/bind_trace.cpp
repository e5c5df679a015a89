// The native GPUMemTrace behind gpumem.GPUMemTrace. Calls on one trace are serialised by a
// mutex taken after the GIL is released, so a Python thread blocked on it never holds the GIL
// that the cache-release hook or the report sink of the running call may need.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "gpumem/attribution.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/trace.hpp"
#include "python_stdout.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

struct Trace {
  explicit Trace(TraceOptions options) : trace(std::move(options)) {}
  std::mutex mutex;
  GPUMemTrace trace;
};

// Runs `action` on the trace with the GIL released and the trace's mutex held.
template <class Action>
auto locked(Trace& self, Action&& action) {
  py::gil_scoped_release unlocked;
  std::lock_guard lock(self.mutex);
  return action(self.trace);
}

py::dict as_dict(const TraceBytes& bytes) {
  py::dict dict;
  dict["source"] = std::string(to_string(bytes.source));
  dict["device"] = bytes.device;
  dict["start"] = bytes.start;
  dict["end"] = bytes.end;
  dict["peak"] = bytes.peak;
  dict["delta_used"] = bytes.delta_used;
  dict["delta_peaked"] = bytes.delta_peaked;
  dict["quantity"] = std::string(to_string(bytes.quantity));
  dict["covers"] = coverage_names(bytes.reading.covers);
  dict["description"] = describe(bytes.reading);
  dict["device_used_start"] = bytes.reading.device_used_start_bytes;
  dict["device_used_end"] = bytes.reading.device_used_current_bytes;
  dict["device_used_peak"] = bytes.reading.device_used_peak_bytes;
  return dict;
}

std::unique_ptr<Trace> make_trace(bool silent, std::optional<std::string> ctx, bool on_exit_report,
                                  int device, const std::string& source, bool no_cache,
                                  bool attribute) {
  TraceOptions options;
  options.silent = silent;
  options.ctx = std::move(ctx);
  options.on_exit_report = on_exit_report;
  options.device = device;
  options.source = parse_source(source);
  options.no_cache = no_cache;
  options.attribute = attribute;
  options.sink = python_stdout_sink();
  py::gil_scoped_release unlocked;  // starting a sampler or CUPTI may block
  return std::make_unique<Trace>(std::move(options));
}

}  // namespace

Source parse_source(const std::string& name) {
  for (Source source :
       {Source::automatic, Source::exact, Source::reported, Source::sampled, Source::none}) {
    if (to_string(source) == name) return source;
  }
  throw py::value_error("unknown source '" + name +
                        "': expected automatic, exact, reported, sampled or none");
}

void bind_trace(py::module_& module) {
  using Subctx = std::optional<std::string>;
  py::class_<Trace>(module, "Trace", "The native trace; gpumem.GPUMemTrace wraps it.")
      .def(py::init(&make_trace), py::kw_only(), py::arg("silent") = false,
           py::arg("ctx") = py::none(), py::arg("on_exit_report") = true,
           py::arg("device") = current_device, py::arg("source") = "automatic",
           py::arg("no_cache") = true, py::arg("attribute") = false)
      .def("start", [](Trace& self) { locked(self, [](GPUMemTrace& t) { t.start(); }); })
      .def("stop", [](Trace& self) { locked(self, [](GPUMemTrace& t) { t.stop(); }); })
      .def("reset", [](Trace& self) { locked(self, [](GPUMemTrace& t) { t.reset(); }); })
      .def("data",
           [](Trace& self) { return locked(self, [](GPUMemTrace& t) { return t.data(); }); })
      .def("data_bytes",
           [](Trace& self) {
             return as_dict(locked(self, [](GPUMemTrace& t) { return t.data_bytes(); }));
           })
      .def(
          "report",
          [](Trace& self, Subctx subctx) {
            locked(self, [&](GPUMemTrace& t) { t.report(std::move(subctx)); });
          },
          py::arg("subctx") = py::none())
      .def(
          "report_n_reset",
          [](Trace& self, Subctx subctx) {
            locked(self, [&](GPUMemTrace& t) { t.report_n_reset(std::move(subctx)); });
          },
          py::arg("subctx") = py::none())
      .def(
          "set_silent",
          [](Trace& self, bool silent) { locked(self, [&](GPUMemTrace& t) { t.silent(silent); }); },
          py::arg("silent") = true)
      .def_property_readonly(
          "is_silent",
          [](Trace& self) { return locked(self, [](GPUMemTrace& t) { return t.is_silent(); }); })
      .def_property_readonly(
          "is_running",
          [](Trace& self) { return locked(self, [](GPUMemTrace& t) { return t.is_running(); }); })
      .def_property_readonly("on_exit_report",
                             [](Trace& self) {
                               return locked(self,
                                             [](GPUMemTrace& t) { return t.on_exit_report(); });
                             })
      .def_property_readonly(
          "ctx", [](Trace& self) { return locked(self, [](GPUMemTrace& t) { return t.ctx(); }); })
      .def_property_readonly(
          "source",
          [](Trace& self) {
            return locked(self, [](GPUMemTrace& t) { return std::string(to_string(t.source())); });
          })
      .def("peak_snapshot",
           [](Trace& self) {
             return locked(self, [](GPUMemTrace& t) { return t.peak_snapshot(); });
           })
      .def("repr",
           [](Trace& self) { return locked(self, [](GPUMemTrace& t) { return t.repr(); }); });

  module.def("format_report", &format_report, py::arg("delta_used_mb"), py::arg("delta_peaked_mb"),
             py::arg("ctx") = py::none(), py::arg("subctx") = py::none());
  module.def("trace_deltas", &trace_deltas, py::arg("start"), py::arg("end"), py::arg("peak"));
}

}  // namespace gpumem::python
