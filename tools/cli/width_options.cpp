#include "width_options.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "usage.hpp"

namespace gpumem::cli {

void add_width_options(CLI::App& command, WidthFlags& flags) {
  auto* wide = command.add_flag("--wide", flags.wide,
                                "Show every column in full, however wide (the default when "
                                "stdout is not a terminal and COLUMNS is unset)");
  number_option(command,
                command.add_option(
                    "--width", flags.width,
                    "Fit the tables to N columns (default: the terminal's width, else COLUMNS)"),
                {"columns", 40, 100000, true})
      ->excludes(wide);
}

TableOptions stdout_table_options(const WidthFlags& flags) {
  TableOptions options;
  options.style = output_style(STDOUT_FILENO);
  if (!flags.wide) {
    options.width =
        flags.width != 0 ? std::optional<std::size_t>(flags.width) : output_width(STDOUT_FILENO);
  }
  return options;
}

}  // namespace gpumem::cli
