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

std::optional<std::size_t> chosen_width(const WidthFlags& flags, int fd) {
  if (flags.wide) return std::nullopt;
  return flags.width != 0 ? std::optional<std::size_t>(flags.width) : output_width(fd);
}

TableOptions stdout_table_options(const WidthFlags& flags) {
  TableOptions options;
  options.style = output_style(STDOUT_FILENO);
  options.width = chosen_width(flags, STDOUT_FILENO);
  return options;
}

}  // namespace gpumem::cli
