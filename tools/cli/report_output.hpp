// What `gpumem report` writes: the terminal tables, the JSON (gpumem.report/1) and the SVG.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "job_report.hpp"

namespace gpumem::cli {

std::string report_text(const JobReport& report);             // report_text.cpp
nlohmann::ordered_json report_json(const JobReport& report);  // report_json.cpp
std::string report_svg(const JobReport& report);              // report_svg.cpp

}  // namespace gpumem::cli
