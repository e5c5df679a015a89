// The `gpumem` command's own subcommands (`serve` is the exporter's own entry point,
// tools/serve/serve_command.hpp). Each adds itself to the CLI11 app; when it runs it stores the
// process exit status in `exit_code` (0 ok, 1 failure, 2 usage, or the measured child's).
#pragma once

namespace CLI {
class App;
}

namespace gpumem::cli {

void add_list_command(CLI::App& app, int& exit_code);
void add_watch_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_attribution_command(CLI::App& app, int& exit_code);  // attribution/command.cpp
void add_diff_command(CLI::App& app, int& exit_code);         // diff/command.cpp
// `gpumem completion bash|zsh|fish|man`: the shell completions and the man page, from the app.
void add_completion_command(CLI::App& app, int& exit_code);

}  // namespace gpumem::cli
