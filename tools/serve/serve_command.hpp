// The exporter's entry point: `gpumem serve` as a CLI11 subcommand. The gpumem command (tools/cli)
// and the exporter's test driver (tests/serve/serve_driver.cpp) add it to their app; nothing in
// tools/serve depends on the CLI.
#pragma once

namespace CLI {
class App;
}

namespace gpumem::serve {

// Adds the `serve` subcommand and its options to `app`. When the subcommand runs, it serves
// until SIGTERM or SIGINT and stores the process exit status in `exit_code` (0 after a clean
// stop, 1 when it could not start, 2 for bad options). Throws what CLI11 throws while the
// options are declared (never for valid code).
void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace gpumem::serve
