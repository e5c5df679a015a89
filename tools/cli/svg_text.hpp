// Text for gpumem's SVG views: XML-escaped (names are anyone's input), coordinates, axis units.
#pragma once

#include <string>

namespace gpumem::cli {

// `text` as XML character data or an attribute value: shown as on a terminal (printable(): the
// controls XML 1.0 forbids, the bidirectional and invisible characters and the bytes that are not
// UTF-8 as escapes, so the file stays well-formed and a name reads as it is), then &, <, > and "
// escaped.
std::string svg_escape(const std::string& text);

// A coordinate or length with one decimal ("12.5").
std::string svg_number(double value);

// The binary unit an axis up to `max_bytes` is labelled in: GiB from 2 GiB, MiB from 2 MiB, KiB
// from 2 KiB, else bytes.
struct SvgAxisUnit {
  const char* name;
  double bytes;
};
SvgAxisUnit svg_axis_unit(double max_bytes);

}  // namespace gpumem::cli
