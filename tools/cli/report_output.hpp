// What `gpumem report` shows: the terminal tables and the SVG (the JSON, gpumem.report/1, is the
// library's writer: report_document.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "job_report.hpp"

namespace gpumem::cli {

// How the tables are laid out: fitted to `width` columns when set; Unicode ellipses when
// `unicode`.
struct ReportStyle {
  std::optional<std::size_t> width;
  bool unicode = false;
};
std::string report_text(const JobReport& report, const ReportStyle& style);  // report_text.cpp
std::string report_svg(const JobReport& report);                             // report_svg.cpp

}  // namespace gpumem::cli
