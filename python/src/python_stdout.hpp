// A ReportSink that writes through Python's sys.stdout as it is when the report is made, so
// contextlib.redirect_stdout, pytest's capture and notebooks see the lines.
#pragma once

#include "gpumem/trace.hpp"

namespace gpumem::python {

ReportSink python_stdout_sink();

}  // namespace gpumem::python
