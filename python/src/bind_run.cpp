// Run files from Python: a `gpumem run --json` file (gpumem.run/1) read by the library's one
// reader into its one model (gpumem/internal/run_document.hpp), every field a read-only
// attribute; no JSON is parsed again in Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.hpp"
#include "gpumem/internal/run_document.hpp"

namespace py = pybind11;

namespace gpumem::python {

void bind_run(py::module_& module) {
  using namespace gpumem::run;
  py::class_<RunDocDevice>(module, "RunDevice", "A measured device of a run (gpumem.run/1)")
      .def_readonly("device", &RunDocDevice::device)
      .def_readonly("nvml_index", &RunDocDevice::nvml_index)
      .def_readonly("name", &RunDocDevice::name)
      .def_readonly("uuid", &RunDocDevice::uuid)
      .def_readonly("total_bytes", &RunDocDevice::total_bytes)
      .def_readonly("quantity", &RunDocDevice::quantity)
      .def_readonly("peak_bytes", &RunDocDevice::peak_bytes)
      .def_readonly("peak_at_most_bytes", &RunDocDevice::peak_at_most_bytes)
      .def_readonly("peak_time_s", &RunDocDevice::peak_time_s)
      .def_readonly("exact_peak_bytes", &RunDocDevice::exact_peak_bytes)
      .def_readonly("exact_peak_at_most_bytes", &RunDocDevice::exact_peak_at_most_bytes)
      .def_readonly("sampled_peak_bytes", &RunDocDevice::sampled_peak_bytes)
      .def_readonly("context_bytes", &RunDocDevice::context_bytes)
      .def_readonly("device_used_start_bytes", &RunDocDevice::device_used_start_bytes)
      .def_readonly("device_used_peak_bytes", &RunDocDevice::device_used_peak_bytes)
      .def_readonly("device_used_end_bytes", &RunDocDevice::device_used_end_bytes)
      .def_readonly("unmapped_peak_bytes", &RunDocDevice::unmapped_peak_bytes)
      .def_readonly("bounded_by_device_used", &RunDocDevice::bounded_by_device_used);
  py::class_<RunDocProcess>(module, "RunProcess", "A GPU process of a run (gpumem.run/1)")
      .def_readonly("pid", &RunDocProcess::pid)
      .def_readonly("nvml_pid", &RunDocProcess::nvml_pid)
      .def_readonly("name", &RunDocProcess::name)
      .def_readonly("device", &RunDocProcess::device)
      .def_readonly("mode", &RunDocProcess::mode)
      .def_readonly("reason", &RunDocProcess::reason)
      .def_readonly("sampled_peak_bytes", &RunDocProcess::sampled_peak_bytes)
      .def_readonly("rank", &RunDocProcess::rank)
      .def_readonly("local_rank", &RunDocProcess::local_rank);
  py::class_<RunDocRankDevice>(module, "RunRankDevice", "A rank's peak on one device")
      .def_readonly("device", &RunDocRankDevice::device)
      .def_readonly("uuid", &RunDocRankDevice::uuid)
      .def_readonly("peak_bytes", &RunDocRankDevice::peak_bytes)
      .def_readonly("measured", &RunDocRankDevice::measured);
  py::class_<RunDocRank>(module, "RunRank", "A rank of a run and where it peaked")
      .def_readonly("rank", &RunDocRank::rank)
      .def_readonly("local_rank", &RunDocRank::local_rank)
      .def_readonly("pids", &RunDocRank::pids)
      .def_readonly("peak_bytes", &RunDocRank::peak_bytes)
      .def_readonly("device", &RunDocRank::device)
      .def_readonly("uuid", &RunDocRank::uuid)
      .def_readonly("measured", &RunDocRank::measured)
      .def_readonly("devices", &RunDocRank::devices);
  py::class_<RunDocPidNamespace>(module, "RunPidNamespace", "Whose pids NVML gave the run")
      .def_readonly("nvml_pids", &RunDocPidNamespace::nvml_pids)
      .def_readonly("reason", &RunDocPidNamespace::reason)
      .def_readonly("matched", &RunDocPidNamespace::matched)
      .def_readonly("unmatched", &RunDocPidNamespace::unmatched)
      .def_readonly("nested", &RunDocPidNamespace::nested);
  py::class_<RunDocOwnRank>(module, "RunOwnRank", "gpumem's own rank, from its environment")
      .def_readonly("rank", &RunDocOwnRank::rank)
      .def_readonly("local_rank", &RunDocOwnRank::local_rank)
      .def_readonly("variable", &RunDocOwnRank::variable);
  py::class_<RunDocBudget>(module, "RunBudget", "A --max-peak verdict on one device")
      .def_readonly("device", &RunDocBudget::device)
      .def_readonly("budget_bytes", &RunDocBudget::budget_bytes)
      .def_readonly("peak_bytes", &RunDocBudget::peak_bytes)
      .def_readonly("exceeded", &RunDocBudget::exceeded)
      .def_readonly("measured", &RunDocBudget::measured)
      .def_readonly("may_be_higher", &RunDocBudget::may_be_higher)
      .def_readonly("peak_at_most_bytes", &RunDocBudget::peak_at_most_bytes);
  py::class_<RunDocument>(module, "RunDocument",
                          "A gpumem run file (gpumem.run/1), as the library reads it")
      .def_readonly("command", &RunDocument::command)
      .def_readonly("exit_code", &RunDocument::exit_code)
      .def_readonly("signal", &RunDocument::signal)
      .def_readonly("elapsed_s", &RunDocument::elapsed_s)
      .def_readonly("start_unix_s", &RunDocument::start_unix_s)
      .def_readonly("end_unix_s", &RunDocument::end_unix_s)
      .def_readonly("mode", &RunDocument::mode)
      .def_readonly("requested_mode", &RunDocument::requested_mode)
      .def_readonly("fallback_reason", &RunDocument::fallback_reason)
      .def_readonly("exact_processes", &RunDocument::exact_processes)
      .def_readonly("escaped_processes", &RunDocument::escaped_processes)
      .def_readonly("descendants_running", &RunDocument::descendants_running)
      .def_readonly("descendants_waited", &RunDocument::descendants_waited)
      .def_readonly("interval_s", &RunDocument::interval_s)
      .def_readonly("samples", &RunDocument::samples)
      .def_readonly("devices", &RunDocument::devices)
      .def_readonly("processes", &RunDocument::processes)
      .def_readonly("pid_namespace", &RunDocument::pid_namespace)
      .def_readonly("host", &RunDocument::host)
      .def_readonly("gpumem_rank", &RunDocument::gpumem_rank)
      .def_readonly("ranks", &RunDocument::ranks)
      .def_readonly("budgets", &RunDocument::budgets)
      .def_readonly("budget_exceeded", &RunDocument::budget_exceeded)
      .def("to_json", &run_document_text,
           "The document as gpumem run --json writes it (the library's one writer)");
  module.def(
      "read_run",
      [](const std::string& path) {
        std::string error;
        std::optional<RunDocument> document;
        {
          py::gil_scoped_release unlocked;  // a file read: no Python object touched
          document = read_run_document(path, &error);
        }
        if (!document) throw py::value_error(error);
        return *document;
      },
      py::arg("path"),
      "A gpumem run --json file read by the library's one reader of gpumem.run/1; ValueError "
      "naming the file and what is wrong with it");
}

}  // namespace gpumem::python
