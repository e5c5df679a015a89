// Plain-text tables with columns padded to their widest cell, in terminal columns (UTF-8 text
// and colour sequences are measured as they show).
#pragma once

#include <string>
#include <vector>

namespace gpumem::cli {

class Table {
 public:
  // A header starting with '>' is right-aligned (the '>' is not shown).
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpumem::cli
