#include "http_request.hpp"

#include <algorithm>
#include <cctype>

namespace gpumem::serve {
namespace {

bool is_token(std::string_view text) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view next_line(std::string_view& text) {
  std::size_t newline = text.find('\n');
  std::string_view line = text.substr(0, newline);
  text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

HttpRequest error(int status) {
  HttpRequest request;
  request.error_status = status;
  return request;
}

}  // namespace

std::size_t find_head_end(std::string_view buffer) {
  // Bare LF line ends are accepted too, as most servers do.
  std::size_t crlf = buffer.find("\r\n\r\n");
  std::size_t lf = buffer.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::string_view::npos;
  if (lf == std::string_view::npos || (crlf != std::string_view::npos && crlf < lf))
    return crlf + 4;
  return lf + 2;
}

HttpRequest parse_request_head(std::string_view head) {
  std::string_view line = next_line(head);
  std::size_t first = line.find(' ');
  std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) return error(400);
  std::string_view method = line.substr(0, first);
  std::string_view target = line.substr(first + 1, last - first - 1);
  std::string_view version = line.substr(last + 1);
  if (!is_token(method) || target.empty() || target.front() != '/' ||
      target.find_first_of(" \t") != std::string_view::npos) {
    return error(400);
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return error(505);

  HttpRequest request;
  request.keep_alive = version == "HTTP/1.1";
  bool has_body = false;
  while (!head.empty()) {
    line = next_line(head);
    if (line.empty()) break;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return error(400);
    std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    if (iequals(name, "Connection")) {
      if (contains_token(value, "close")) request.keep_alive = false;
      if (contains_token(value, "keep-alive")) request.keep_alive = true;
    } else if (iequals(name, "Transfer-Encoding")) {
      has_body = true;
    } else if (iequals(name, "Content-Length")) {
      has_body = has_body || value != "0";
    }
  }
  // A body would have to be read and thrown away; no page here takes one.
  if (has_body) return error(413);
  if (method == "HEAD") {
    request.head_only = true;
  } else if (method != "GET") {
    return error(405);
  }
  request.path = std::string(target.substr(0, target.find('?')));
  return request;
}

}  // namespace gpumem::serve
