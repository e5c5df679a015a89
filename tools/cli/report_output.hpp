// What `gpumem report` writes: the terminal tables, the JSON (gpumem.report/1) and the SVG.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "job_report.hpp"

namespace gpumem::cli {

// How the tables are laid out: fitted to `width` columns when set; Unicode ellipses when
// `unicode`.
struct ReportStyle {
  std::optional<std::size_t> width;
  bool unicode = false;
};
std::string report_text(const JobReport& report, const ReportStyle& style);  // report_text.cpp
nlohmann::ordered_json report_json(const JobReport& report);                 // report_json.cpp
std::string report_svg(const JobReport& report);                             // report_svg.cpp

}  // namespace gpumem::cli
