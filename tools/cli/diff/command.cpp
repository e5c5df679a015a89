// `gpumem diff A B`: what changed between two runs (run files, reports or attribution documents):
// the peak per device and per rank and, with attribution, the allocating stacks; --fail-above
// turns a growth into exit status 3 for CI.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "diff/diff.hpp"
#include "format.hpp"
#include "output_file.hpp"
#include "run_budget.hpp"
#include "terminal.hpp"
#include "text_width.hpp"
#include "usage.hpp"
#include "width_options.hpp"

namespace gpumem::cli {
namespace {

struct DiffOptions {
  std::string before, after;
  std::vector<std::string> attribute;  // --attribute A.json B.json, next to two run files
  std::string json_path;
  std::string svg_path;
  std::optional<diff::Threshold> fail_above;
  WidthFlags width;
};

// Messages name files and quote what they hold (a schema's name): shown through printable().
void tell(const std::string& message) {
  std::cerr << "gpumem diff: " << printable(message) << "\n";
}

// What a schema names, for a line that says two inputs differ in kind.
std::string kind_of(const std::string& schema) {
  if (schema.rfind("gpumem.run/", 0) == 0) return "a run file (" + schema + ")";
  if (schema.rfind("gpumem.report/", 0) == 0) return "a report (" + schema + ")";
  if (schema.rfind("gpumem.attribution/", 0) == 0)
    return "an attribution document (" + schema + ")";
  return "a " + schema + " document";
}

int diff_command(const DiffOptions& options) {
  if (std::string error;
      !check_outputs({{"--json", options.json_path}, {"--svg", options.svg_path}}, &error)) {
    tell(error);
    return usage_status;
  }
  std::string error;
  std::optional<diff::Input> before = diff::read_input(options.before, &error);
  if (!before) {
    tell(error);
    return 1;
  }
  std::optional<diff::Input> after = diff::read_input(options.after, &error);
  if (!after) {
    tell(error);
    return 1;
  }
  if (before->schema != after->schema) {
    tell(options.after + " is " + kind_of(after->schema) + ", " + options.before + " " +
         kind_of(before->schema) +
         ": gpumem diff compares two of a kind (two run files, two reports or two attribution "
         "documents; --attribute A.json B.json adds attribution to two run files)");
    return 1;
  }
  // The stacks: the inputs' own, or the attribution documents named next to them.
  std::optional<diff::Input> before_stacks, after_stacks;
  if (!options.attribute.empty()) {
    if (before->attribution) {
      tell("--attribute: " + options.before + " and " + options.after +
           " are attribution documents already");
      return usage_status;
    }
    for (std::size_t at = 0; at < 2; ++at) {
      std::optional<diff::Input>& side = at == 0 ? before_stacks : after_stacks;
      side = diff::read_input(options.attribute[at], &error);
      if (!side) {
        tell("--attribute " + error);
        return 1;
      }
      if (!side->attribution) {
        tell("--attribute " + options.attribute[at] + " is " + kind_of(side->schema) +
             ", not an attribution document (gpumem run --attribute writes them)");
        return 1;
      }
    }
  }
  const attribution::Document* stacks_a = before_stacks         ? &*before_stacks->attribution
                                          : before->attribution ? &*before->attribution
                                                                : nullptr;
  const attribution::Document* stacks_b = after_stacks         ? &*after_stacks->attribution
                                          : after->attribution ? &*after->attribution
                                                               : nullptr;
  for (const attribution::Document* document : {stacks_a, stacks_b})
    for (const std::string& warning : document ? document->warnings : std::vector<std::string>{})
      tell("warning: " + document->path + ": " + warning);

  const diff::Diff result = diff::compare(*before, *after, stacks_a, stacks_b);
  const std::vector<const diff::DeviceChange*> over =
      options.fail_above ? diff::over_threshold(result, *options.fail_above)
                         : std::vector<const diff::DeviceChange*>{};

  // An output on stdout ('-') takes the tables' place.
  if (options.json_path != kStdoutPath && options.svg_path != kStdoutPath) {
    const TableOptions table = stdout_table_options(options.width);
    std::cout << diff::diff_text(result, {table.width, table.style.unicode});
  }
  bool written = true;
  auto write = [&](const std::string& path, const std::string& content) {
    if (!write_output(path, content, &error)) {
      tell(error);
      written = false;
    }
  };
  if (!options.json_path.empty())
    write(options.json_path, diff::diff_json(result, options.fail_above));
  if (!options.svg_path.empty()) write(options.svg_path, diff::diff_svg(result));
  std::cout.flush();
  // The verdict last, on stderr, where a CI log's reader looks.
  for (const diff::DeviceChange* device : over) {
    const std::optional<double> percent = device->peak.percent();
    char grown[32] = "from nothing";
    if (percent) std::snprintf(grown, sizeof grown, "%+.1f%%", *percent);
    tell(device->label + " grew " + format_bytes(device->peak.delta()) + " (" + grown +
         "): over --fail-above " + options.fail_above->text);
  }
  if (!written) return 1;
  return over.empty() ? 0 : over_budget_status;
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* command = app.add_subcommand(
      "diff",
      "Show what changed between two runs: the peak per device and rank, and the allocating "
      "stacks that grew or shrank");
  set_usage(*command, "gpumem diff [OPTIONS] BEFORE AFTER");
  command->footer(
      "E.g. gpumem diff before.json after.json --fail-above 5%\nBEFORE and AFTER: two run files "
      "(gpumem run --json), two reports (gpumem report --json) or two attribution documents "
      "(gpumem run --attribute).");
  command->add_option("before", options->before, "The earlier run's file")
      ->required()
      ->type_name("FILE");
  command->add_option("after", options->after, "The later run's file")
      ->required()
      ->type_name("FILE");
  command
      ->add_option("--attribute", options->attribute,
                   "Attribution documents of the two runs (before, after), to compare their "
                   "allocating stacks next to two run files or reports")
      ->expected(2)
      ->type_name("A.json B.json");
  command->add_option("--json", options->json_path,
                      "Write the comparison as JSON (gpumem.diff/1); '-' prints it instead of "
                      "the tables (every output: a regular file, new or replaced, or '-')");
  command->add_option("--svg", options->svg_path,
                      "Write an SVG chart of the peaks and stacks, before and after ('-': stdout)");
  command
      ->add_option_function<std::string>(
          "--fail-above",
          [options](const std::string& value) {
            std::string error;
            options->fail_above = diff::parse_threshold(value, &error);
            if (!options->fail_above) throw CLI::ValidationError("--fail-above " + error);
          },
          "Exit with status 3 when a device's peak grew by more than this: a percentage (5%) or "
          "a size (256MiB)")
      ->type_name("PCT|SIZE");
  add_width_options(*command, options->width);
  command->callback([options, &exit_code] { exit_code = diff_command(*options); });
}

}  // namespace gpumem::cli
