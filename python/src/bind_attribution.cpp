// Attribution from Python: peak and out-of-memory snapshots, and the Python frame provider that
// puts the allocating Python code into allocation stacks.
#include <Python.h>
#include <frameobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"

namespace py = pybind11;

namespace gpumem::python {
namespace {

// The UTF-8 form of a str, cached in the object (valid while the object lives), or nullptr.
const char* utf8(PyObject* text) noexcept {
  if (text == nullptr || !PyUnicode_Check(text)) return nullptr;
  const char* chars = PyUnicode_AsUTF8(text);
  if (chars == nullptr) PyErr_Clear();
  return chars;
}

// The calling thread's state, or nullptr (PyThreadState_Get would abort without one).
PyThreadState* current_thread_state() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

// Called on the allocating thread while attribution is on. It runs no Python code: it walks
// the thread's frame chain with the C API, and only where this thread holds the GIL. The names
// it hands out belong to code objects that the running frames keep alive.
std::size_t python_frames(PythonFrame* out, std::size_t capacity) noexcept {
  if (capacity == 0 || Py_IsInitialized() == 0 || PyGILState_Check() == 0) return 0;
  PyThreadState* thread = current_thread_state();
  if (thread == nullptr) return 0;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);  // an error being handled stays as it was
  std::size_t count = 0;
  PyFrameObject* frame = PyThreadState_GetFrame(thread);  // a new reference
  while (frame != nullptr && count < capacity) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // a new reference
    out[count].function = utf8(code->co_name);
    out[count].file = utf8(code->co_filename);
    out[count].line = PyFrame_GetLineNumber(frame);
    Py_DECREF(code);
    ++count;
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  PyErr_Restore(type, value, traceback);
  return count;
}

std::vector<std::pair<std::size_t, std::uint64_t>> by_stack(const AttributionSnapshot& s) {
  return s.bytes_by_stack();
}

// The allocating frame of a stack as the library's policy decides it, named as every view names
// it ("load_weights (train.py:12)"); None for an unknown or empty stack.
std::optional<std::string> allocated_by(const AttributionSnapshot& s, std::size_t stack) {
  const std::optional<std::size_t> frame = s.allocating_frame(stack);
  if (!frame) return std::nullopt;
  return detail::attribution::frame_label(detail::attribution::document_frame(s.frames[*frame]));
}

// A value of the document as Python objects: dicts, lists, str (a symbol that is not UTF-8 with
// U+FFFD, as the document's text has it), int, float, bool, None.
py::object python_value(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::ordered_json::value_t::object: {
      py::dict out;
      for (const auto& [key, item] : value.items()) out[py::str(key)] = python_value(item);
      return out;
    }
    case nlohmann::ordered_json::value_t::array: {
      py::list out;
      for (const auto& item : value) out.append(python_value(item));
      return out;
    }
    case nlohmann::ordered_json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      PyObject* decoded =
          PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
      if (decoded == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(decoded);
    }
    case nlohmann::ordered_json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return py::int_(value.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return py::int_(value.get<std::uint64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return py::float_(value.get<double>());
    default:
      return py::none();
  }
}

// The gpumem.attribution/1 document holding the snapshot, from the library's one model and its
// one writer, handed over as Python objects: no JSON text between them to read again.
py::object document(const AttributionSnapshot& s) {
  return python_value(detail::attribution::document_json(detail::attribution::to_document({s})));
}

}  // namespace

void bind_attribution(py::module_& module) {
  py::class_<AttributionSnapshot>(module, "Snapshot",
                                  "A native attribution snapshot; gpumem.AttributionSnapshot "
                                  "wraps it.")
      .def("to_json", &AttributionSnapshot::to_json)
      .def("document", &document,
           "The gpumem.attribution/1 document holding this snapshot, as dicts and lists: the "
           "library's model through its one writer.")
      .def("bytes_by_stack", &by_stack)
      .def("top_function", &AttributionSnapshot::top_function)
      .def("allocating_frame", &AttributionSnapshot::allocating_frame, py::arg("stack"))
      .def("allocated_by", &allocated_by, py::arg("stack"));
  module.def(
      "last_oom", [] { return last_oom(); }, py::call_guard<py::gil_scoped_release>());
  module.def("register_frame_provider", [] { set_python_frame_provider(&python_frames); });
  module.def("unregister_frame_provider", [] { set_python_frame_provider(nullptr); });
}

}  // namespace gpumem::python
