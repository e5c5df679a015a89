// `gpumem serve` without the rest of the gpumem command: lets the exporter's tests and
// benchmark run while the CLI is built separately.
#include <CLI/CLI.hpp>

#include "serve_command.hpp"
#include "usage.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpumem", "gpumem"};
  gpumem::cli::install_usage(app);  // gpumem's help and usage errors, as bin/gpumem
  app.require_subcommand(1);
  int exit_code = 0;
  gpumem::serve::add_serve_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    return gpumem::cli::report_usage_error(app, error);
  }
  return exit_code;
}
