// Sizes as people write them ("2 GiB"), for the pytest plugin's markers: the library's one parser
// (the one `gpumem run --max-peak` uses), so a size means the same bytes in both.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "gpumem/internal/byte_size.hpp"

namespace py = pybind11;

namespace gpumem::python {

void bind_byte_size(py::module_& module) {
  module.def(
      "parse_byte_size",
      [](const std::string& text) -> std::uint64_t {
        std::string error;
        const auto bytes = detail::parse_byte_size(text, &error);
        if (!bytes) throw py::value_error(error);
        return *bytes;
      },
      py::arg("text"),
      "``text`` (\"2 GiB\", \"1.5GB\", \"512 MiB\") as bytes: a number and a unit, B, kB, MB, GB,\n"
      "TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); ValueError saying what is\n"
      "wrong otherwise.");
}

}  // namespace gpumem::python
