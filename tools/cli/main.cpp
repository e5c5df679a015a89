// The gpumem command: list and watch GPUs, measure a command's GPU memory, serve metrics.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpumem/version.hpp"

int main(int argc, char** argv) {
  int exit_code = 0;
  CLI::App app{"gpumem: how much GPU memory programs use, and how high it peaks", "gpumem"};
  app.set_version_flag("-V,--version", std::string("gpumem ") + gpumem::version);
  app.require_subcommand(1);
  gpumem::cli::add_list_command(app, exit_code);
  gpumem::cli::add_watch_command(app, exit_code);
  gpumem::cli::add_run_command(app, exit_code);
  gpumem::cli::add_serve_command(app, exit_code);
  // `run` takes its command after "--"; CLI11 would refuse the separator with a prefix command,
  // so it is dropped here: everything from the command's name on is passed through anyway.
  std::vector<std::string> arguments(argv + 1, argv + argc);
  if (auto separator = std::find(arguments.begin(), arguments.end(), "--");
      separator != arguments.end()) {
    arguments.erase(separator);
  }
  std::reverse(arguments.begin(), arguments.end());  // CLI11 takes them last first
  try {
    app.parse(arguments);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    // One line, the usual status for bad usage.
    std::cerr << "gpumem: " << error.what() << " (see gpumem --help)\n";
    return 2;
  }
  return exit_code;
}
