// `gpumem serve` without the rest of the gpumem command: lets the exporter's tests and
// benchmark run while the CLI is built separately.
#include <CLI/CLI.hpp>

#include "serve_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpumem"};
  app.require_subcommand(1);
  int exit_code = 0;
  gpumem::serve::add_serve_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int status = app.exit(error);
    return status == 0 ? 0 : 2;
  }
  return exit_code;
}
