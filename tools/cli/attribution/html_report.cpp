// The HTML report: a page skeleton, the style and script inlined, and the document embedded as
// JSON in a non-executed script element, escaped so that no text in it can end that element.
#include "attribution/markup.hpp"
#include "attribution/views.hpp"

namespace gpumem::cli::attribution {

extern const char* const kReportStyle;   // html_style.cpp
extern const char* const kReportScript;  // html_script.cpp

namespace {

// JSON that can sit inside <script>: '<', '>' and '&' as \u escapes (no "</script>", no "<!--"),
// and U+2028/U+2029 escaped too (line breaks to older JavaScript parsers). Outside strings JSON
// has none of these, so the text stays the same JSON.
std::string embeddable(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (std::size_t at = 0; at < json.size(); ++at) {
    const char c = json[at];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && at + 2 < json.size() && json[at + 1] == '\x80' &&
               (json[at + 2] == '\xA8' || json[at + 2] == '\xA9')) {
      out += json[at + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      at += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string index_or_null(std::optional<std::size_t> index) {
  return index ? std::to_string(*index) : "null";
}

}  // namespace

std::string html_report(const Document& document, std::optional<std::size_t> peak,
                        std::optional<std::size_t> oom) {
  const std::string json = document_json(document).dump(
      -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string title = "gpumem attribution";
  if (!document.command.empty()) title += ": " + document.command;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<title>" +
      escape_markup(title) + "</title>\n<style>" + kReportStyle + "</style>\n</head>\n<body>\n";
  out +=
      "<header><h1>What held GPU memory</h1><div class=\"muted\" id=\"command\"></div></header>\n"
      "<main>\n"
      "<section id=\"cards\"></section>\n"
      "<section id=\"timelines\"><h2>Memory over time</h2></section>\n"
      "<section class=\"icicle-panel\" id=\"panel-peak\"></section>\n"
      "<section class=\"icicle-panel\" id=\"panel-oom\"></section>\n"
      "<section id=\"snapshots\"><h2>Every snapshot</h2></section>\n"
      "<section class=\"icicle-panel\" id=\"panel-chosen\" hidden></section>\n"
      "<noscript>This report draws itself with JavaScript; the data is in the "
      "gpumem-attribution element of this file (gpumem.attribution/1).</noscript>\n"
      "</main>\n";
  out += "<script type=\"application/json\" id=\"gpumem-attribution\">" + embeddable(json) +
         "</script>\n";
  out += "<script type=\"application/json\" id=\"gpumem-chosen\">{\"peak\":" + index_or_null(peak) +
         ",\"oom\":" + index_or_null(oom) + "}</script>\n";
  // The frame policy's decisions, so that the script decides nothing of its own.
  nlohmann::json frames = {{"shown", nlohmann::json::array()}, {"labels", nlohmann::json::array()}};
  for (const std::vector<std::size_t>& stack : document.stacks) {
    const std::vector<std::size_t> shown = shown_stack(document, stack);
    frames["shown"].push_back(shown);
    frames["labels"].push_back(
        shown.empty() ? std::string() : short_frame_label(document.frames[shown.front()], "…"));
  }
  out += "<script type=\"application/json\" id=\"gpumem-frames\">" +
         embeddable(frames.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
         "</script>\n";
  out += "<script>" + std::string(kReportScript) + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace gpumem::cli::attribution
