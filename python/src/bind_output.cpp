// What the pytest plugin's --gpumem-json may write to, the writing, and how its messages show
// what they quote: the library's one rule for every writer (gpumem/internal/output_file.hpp) and
// its one function for untrusted text (printable_text.hpp), so that a path means the same to the
// plugin as to `gpumem run --json`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "gpumem/internal/output_file.hpp"
#include "gpumem/internal/printable_text.hpp"

namespace py = pybind11;

namespace gpumem::python {

void bind_output(py::module_& module) {
  module.def(
      "check_outputs",
      [](const std::vector<std::pair<std::string, py::bytes>>& outputs)
          -> std::optional<std::string> {
        std::vector<detail::OutputRequest> requests;
        for (const auto& [option, path] : outputs) requests.push_back({option, std::string(path)});
        std::string error;
        py::gil_scoped_release unlocked;
        if (detail::check_outputs(requests, &error)) return std::nullopt;
        return error;
      },
      py::arg("outputs"),
      "Whether every ``(option, path)`` can be written by gpumem's rule (``-`` or a regular file,\n"
      "new or replaced; never through a link or into a special file; no two naming one file):\n"
      "None, or the reason in one line. Paths are bytes (``os.fsencode``).");
  module.def(
      "output_identity",
      [](const py::bytes& path) { return py::bytes(detail::output_identity(std::string(path))); },
      py::arg("path"),
      "The file ``path`` (bytes) names as an output: its folder resolved, and its name.");
  module.def(
      "printable", [](const py::bytes& text) { return detail::printable(std::string(text)); },
      py::arg("text"),
      "``text`` (bytes) as gpumem shows untrusted text on a terminal: control, bidirectional and\n"
      "invisible characters and bytes that are not UTF-8 as escapes (``\\x1b``, ``\\u202e``).");
  module.def(
      "write_output",
      [](const py::bytes& path, const py::bytes& content) -> std::optional<std::string> {
        const std::string target(path);
        const std::string text(content);
        std::string error;
        py::gil_scoped_release unlocked;
        if (detail::write_output(target, text, &error)) return std::nullopt;
        return error;
      },
      py::arg("path"), py::arg("content"),
      "Writes ``content`` to ``path`` (bytes, not ``-``) atomically by gpumem's rule, a replaced\n"
      "file keeping its permissions: None, or the reason in one line.");
}

}  // namespace gpumem::python
