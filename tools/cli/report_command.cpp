// `gpumem report FILE...`: combines the run files of a job's nodes and ranks.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "commands.hpp"
#include "job_report.hpp"
#include "output_file.hpp"
#include "report_output.hpp"
#include "terminal.hpp"
#include "text_width.hpp"
#include "usage.hpp"
#include "width_options.hpp"

namespace gpumem::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string json_path;  // "-": stdout, instead of the tables
  std::string svg_path;
  bool skip_bad = false;
  WidthFlags width;
};

// Messages name files and quote what they hold (a schema's name): shown through printable().
void say(const std::string& message) {
  std::cerr << "gpumem report: " << printable(message) << "\n";
}

// The same file named twice (a glob and a name) counts once.
std::string identity(const std::string& path) {
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

int report_command(const ReportOptions& options) {
  if (std::string error;
      !check_outputs({{"--json", options.json_path}, {"--svg", options.svg_path}}, &error)) {
    say(error);
    return 2;
  }
  std::vector<RunFile> runs;
  std::set<std::string> seen;
  std::size_t skipped = 0;
  for (const std::string& path : options.files) {
    if (!seen.insert(identity(path)).second) {
      say("skipped " + path + ": named twice");
      continue;
    }
    std::string error;
    // Its summary: what a report combines, in memory that does not grow with its processes.
    std::optional<run::RunDocument> run =
        run::read_run_document(path, &error, run::RunParts::summary);
    if (!run) {
      if (!options.skip_bad) {
        say(error + " (--skip-bad reports the other files)");
        return 1;
      }
      say("skipped " + error);
      ++skipped;
      continue;
    }
    runs.push_back({path, std::move(*run)});
  }
  if (runs.empty()) {
    say("no run file could be read (" + std::to_string(skipped) + " skipped)");
    return 1;
  }
  const JobReport report = combine_runs(runs);
  bool written = true;
  auto write = [&](const std::string& path, const std::string& content) {
    std::string error;
    if (!write_output(path, content, &error)) {
      say(error);
      written = false;
    }
  };
  // An output on stdout ('-') takes the tables' place.
  if (options.json_path != kStdoutPath && options.svg_path != kStdoutPath)
    std::cout << report_text(
        report, {chosen_width(options.width, STDOUT_FILENO), output_style(STDOUT_FILENO).unicode});
  if (!options.json_path.empty()) write(options.json_path, run::report_document_text(report));
  if (!options.svg_path.empty()) write(options.svg_path, report_svg(report));
  std::cout.flush();
  return written ? 0 : 1;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Combine run files (gpumem run --json) of a job's nodes and ranks into one report");
  set_usage(*report, "gpumem report [OPTIONS] FILE...");
  report->footer("E.g. gpumem report run-*.json");
  report->add_option("files", options->files, "Run files written by gpumem run --json")->required();
  report->add_option("--json", options->json_path,
                     "Write the combined report as JSON (gpumem.report/1); '-' prints it instead "
                     "of the tables (every output: a regular file, new or replaced, or '-')");
  report->add_option("--svg", options->svg_path,
                     "Write an SVG chart of the peak per rank ('-': stdout)");
  report->add_flag("--skip-bad", options->skip_bad,
                   "Report the readable files when some cannot be read (each is named)");
  add_width_options(*report, options->width);
  report->callback([options, &exit_code] { exit_code = report_command(*options); });
}

}  // namespace gpumem::cli
