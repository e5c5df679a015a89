#include "table.hpp"

#include <algorithm>

#include "text_width.hpp"

namespace gpumem::cli {

Table::Table(std::vector<std::string> headers) {
  for (std::string& header : headers) {
    const bool right = !header.empty() && header.front() == '>';
    right_.push_back(right);
    headers_.push_back(right ? header.substr(1) : header);
  }
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const std::string& header : headers_) widths.push_back(display_width(header));
  for (const auto& row : rows_) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], display_width(row[column]));
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t column = 0; column < cells.size(); ++column) {
      const std::string padding(widths[column] - display_width(cells[column]), ' ');
      if (column > 0) line += "  ";
      line += right_[column] ? padding + cells[column] : cells[column] + padding;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace gpumem::cli
