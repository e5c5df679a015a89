// Text for gpumem's SVG views: XML-escaped (names are anyone's input) and coordinates.
#pragma once

#include <string>

namespace gpumem::cli {

// `text` as XML character data or an attribute value: &, <, > and " escaped, and the control
// characters XML 1.0 forbids (all below U+0020 but tab) dropped.
std::string svg_escape(const std::string& text);

// A coordinate or length with one decimal ("12.5").
std::string svg_number(double value);

}  // namespace gpumem::cli
