#include "fitted_table.hpp"

#include <algorithm>

#include "table.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

std::string header_text(const std::string& header) {
  return !header.empty() && header.front() == '>' ? header.substr(1) : header;
}

// What is decided for each column as steps are taken.
struct Choice {
  bool shown = true;
  bool shortened = false;
  std::size_t cap = 0;  // text columns: the width they are cut to (0: uncut); flexible: its width
};

class Fitter {
 public:
  explicit Fitter(const FitLayout& layout) : layout_(layout), choices_(layout.columns.size()) {
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      if (flexible(i)) choices_[i].cap = layout.columns[i].min_width;
    }
  }

  std::vector<Choice> fit(std::size_t limit) {
    for (const FitStep& step : layout_.steps) {
      if (line_width() <= limit) break;
      Choice& choice = choices_[step.column];
      if (step.kind == FitStep::drop) choice.shown = false;
      if (step.kind == FitStep::shorten) choice.shortened = true;
    }
    // Still too wide: cut text columns, widest first, down to their minimum.
    for (bool cut = true; cut && line_width() > limit;) {
      cut = false;
      std::size_t widest = choices_.size();
      for (std::size_t i = 0; i < choices_.size(); ++i) {
        const FitColumn& column = layout_.columns[i];
        if (!choices_[i].shown || flexible(i) || column.truncate_to == 0) continue;
        const std::size_t now = text_width(i);
        if (now > std::max(column.truncate_to, display_width(header_text(column.header))) &&
            (widest == choices_.size() || now > text_width(widest))) {
          widest = i;
        }
      }
      if (widest != choices_.size()) {
        choices_[widest].cap = text_width(widest) - 1;
        cut = true;
      }
    }
    // The last resort: no bars.
    for (std::size_t i = 0; i < choices_.size() && line_width() > limit; ++i) {
      if (flexible(i)) choices_[i].shown = false;
    }
    // What is left goes to the flexible columns, in order.
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      if (!flexible(i) || !choices_[i].shown) continue;
      const std::size_t width = line_width();
      if (width < limit) {
        choices_[i].cap = std::min(layout_.columns[i].max_width, choices_[i].cap + (limit - width));
      }
    }
    return choices_;
  }

  std::vector<Choice> wide() {
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      if (flexible(i)) choices_[i].cap = layout_.columns[i].wide_width;
    }
    return choices_;
  }

 private:
  bool flexible(std::size_t i) const { return static_cast<bool>(layout_.columns[i].draw); }

  const std::string& cell(std::size_t column, std::size_t row) const {
    const FitColumn& spec = layout_.columns[column];
    const bool shorter = choices_[column].shortened && row < spec.short_cells.size();
    return shorter ? spec.short_cells[row] : spec.cells[row];
  }

  // The column's width as chosen so far.
  std::size_t text_width(std::size_t column) const {
    const FitColumn& spec = layout_.columns[column];
    std::size_t width = display_width(header_text(spec.header));
    if (flexible(column)) return std::max(width, choices_[column].cap);
    for (std::size_t row = 0; row < spec.cells.size(); ++row) {
      width = std::max(width, display_width(cell(column, row)));
    }
    const std::size_t cap = choices_[column].cap;
    return cap != 0 ? std::min(width, cap) : width;
  }

  std::size_t line_width() const {
    std::size_t width = 0, shown = 0;
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      if (!choices_[i].shown) continue;
      width += text_width(i);
      ++shown;
    }
    return shown == 0 ? 0 : width + 2 * (shown - 1);
  }

  const FitLayout& layout_;
  std::vector<Choice> choices_;
};

}  // namespace

std::string fit_table(const FitLayout& layout, std::optional<std::size_t> width,
                      const std::string& ellipsis) {
  Fitter fitter(layout);
  const std::vector<Choice> choices = width ? fitter.fit(*width) : fitter.wide();
  std::vector<std::string> headers;
  std::size_t rows = 0;
  for (std::size_t i = 0; i < layout.columns.size(); ++i) {
    if (!choices[i].shown) continue;
    headers.push_back(layout.columns[i].header);
    rows = std::max(rows, layout.columns[i].cells.size());
  }
  Table table(headers);
  for (std::size_t row = 0; row < rows; ++row) {
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < layout.columns.size(); ++i) {
      if (!choices[i].shown) continue;
      const FitColumn& column = layout.columns[i];
      if (column.draw) {
        cells.push_back(column.draw(row, choices[i].cap));
        continue;
      }
      const bool shorter = choices[i].shortened && row < column.short_cells.size();
      std::string text = row < column.cells.size()
                             ? (shorter ? column.short_cells[row] : column.cells[row])
                             : std::string();
      if (choices[i].cap != 0) text = truncate_to_width(text, choices[i].cap, ellipsis);
      cells.push_back(std::move(text));
    }
    table.add_row(std::move(cells));
  }
  return table.render();
}

std::vector<std::string> unique_prefixes(const std::vector<std::string>& texts,
                                         std::size_t length) {
  for (;; ++length) {
    std::vector<std::string> prefixes;
    for (const std::string& text : texts) prefixes.push_back(text.substr(0, length));
    std::vector<std::string> sorted = prefixes;
    std::sort(sorted.begin(), sorted.end());
    const bool unique = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    const bool whole = std::all_of(texts.begin(), texts.end(),
                                   [&](const std::string& text) { return text.size() <= length; });
    if (unique || whole) return prefixes;
  }
}

std::string without_vendor(const std::string& name) {
  static const std::string vendor = "NVIDIA ";
  return name.rfind(vendor, 0) == 0 && name.size() > vendor.size() ? name.substr(vendor.size())
                                                                   : name;
}

}  // namespace gpumem::cli
