// The gpumem command: list and watch GPUs, measure a command's GPU memory, serve metrics.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpumem/version.hpp"
#include "serve_command.hpp"
#include "terminal.hpp"
#include "usage.hpp"

namespace {

// `run` takes its command after "--", which CLI11 refuses alongside a prefix command, so the
// separator is dropped here; but only where it ends run's own options: a "--" after the
// command's first word is the command's own (`gpumem run git diff -- file`).
void drop_run_separator(const CLI::App& run, std::vector<std::string>& arguments) {
  // The global options are all flags: the first word that is no option names the subcommand.
  auto word = std::find_if(arguments.begin(), arguments.end(),
                           [](const std::string& text) { return text.rfind('-', 0) != 0; });
  if (word == arguments.end() || *word != "run") return;
  for (auto at = word + 1; at != arguments.end(); ++at) {
    if (*at == "--") {
      arguments.erase(at);
      return;
    }
    if (at->size() < 2 || at->front() != '-') return;  // the command's first word
    const bool value_attached =
        at->find('=') != std::string::npos || (at->size() > 2 && (*at)[1] != '-');
    const CLI::Option* option = run.get_option_no_throw(*at);
    if (!value_attached && option != nullptr && option->get_items_expected_max() != 0) {
      if (++at == arguments.end()) return;  // the value is missing: CLI11 says so
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  CLI::App app{"gpumem: how much GPU memory programs use, and how high it peaks", "gpumem"};
  // Before the subcommands: they inherit it. --help is wrapped to the terminal's width (80 into
  // a pipe, as man pages are).
  gpumem::cli::install_usage(app, gpumem::cli::output_width(1).value_or(80));
  app.set_version_flag("-V,--version", std::string("gpumem ") + gpumem::version);
  app.require_subcommand(1);
  gpumem::cli::add_list_command(app, exit_code);
  gpumem::cli::add_watch_command(app, exit_code);
  gpumem::cli::add_run_command(app, exit_code);
  gpumem::cli::add_report_command(app, exit_code);
  gpumem::cli::add_attribution_command(app, exit_code);
  gpumem::cli::add_diff_command(app, exit_code);
  gpumem::serve::add_serve_command(app, exit_code);
  gpumem::cli::add_completion_command(app, exit_code);
  std::vector<std::string> arguments(argv + 1, argv + argc);
  drop_run_separator(*app.get_subcommand("run"), arguments);
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
    return gpumem::cli::report_usage_error(app, error);
  } catch (const std::bad_alloc&) {
    // Out of memory in a command (an input larger than the memory it may use, under ulimit -v):
    // one line and status 1, never an abort. The readers say which file first when it is theirs.
    std::fputs("gpumem: out of memory\n", stderr);
    return 1;
  }
  return exit_code;
}
