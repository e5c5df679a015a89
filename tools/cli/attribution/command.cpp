// `gpumem attribution FILE`: what held the memory at a peak or an out-of-memory failure, from an
// attribution document, as a table, an SVG icicle, a pprof profile and an HTML report.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "attribution/document.hpp"
#include "attribution/views.hpp"
#include "commands.hpp"
#include "gpumem/internal/torch_snapshot.hpp"
#include "output_file.hpp"
#include "text_width.hpp"
#include "usage.hpp"
#include "width_options.hpp"

namespace gpumem::cli {
namespace {

struct AttributionOptions {
  std::string file;
  std::size_t top = 10;
  std::string snapshot;  // empty: the highest peak and the first failure
  std::string svg_path;
  std::string pprof_path;
  std::string html_path;
  std::string torch_path;
  std::string torch_form = "dict";
  WidthFlags width;
};

void say(const std::string& message) {
  std::cerr << "gpumem attribution: " << printable(message) << "\n";  // it may quote the file
}

std::optional<std::size_t> find(const attribution::Document& document, const char* which) {
  return attribution::choose_snapshot(document, which, nullptr);
}

int attribution_command(const AttributionOptions& options) {
  if (std::string error; !check_outputs({{"--svg", options.svg_path},
                                         {"--pprof", options.pprof_path},
                                         {"--html", options.html_path},
                                         {"--torch-snapshot", options.torch_path}},
                                        &error)) {
    say(error);
    return 2;
  }
  std::string error;
  const std::optional<attribution::Document> document =
      attribution::read_document(options.file, &error);
  if (!document) {
    say(error);
    return 1;
  }
  for (const std::string& warning : document->warnings)
    say("warning: " + options.file + ": " + warning);

  // The snapshots shown: the one asked for, or the highest peak and the first failure.
  std::optional<std::size_t> chosen;
  if (!options.snapshot.empty()) {
    chosen = attribution::choose_snapshot(*document, options.snapshot, &error);
    if (!chosen) {
      say(error);
      return 1;
    }
  }
  const std::optional<std::size_t> peak = find(*document, "peak"), oom = find(*document, "oom");
  std::vector<std::size_t> shown;
  if (chosen) {
    shown.push_back(*chosen);
  } else {
    if (peak) shown.push_back(*peak);
    if (oom) shown.push_back(*oom);
  }
  const TableOptions table = stdout_table_options(options.width);
  // An output on stdout ('-') takes the tables' place.
  const bool tables = options.svg_path != kStdoutPath && options.pprof_path != kStdoutPath &&
                      options.html_path != kStdoutPath && options.torch_path != kStdoutPath;
  if (tables && shown.empty()) std::cout << printable(options.file) << " holds no snapshot.\n";
  for (std::size_t at = 0; tables && at < shown.size(); ++at) {
    if (at > 0) std::cout << "\n";
    std::cout << attribution::top_table(*document, document->snapshots[shown[at]], options.top,
                                        {table.width, table.style});
  }
  std::cout.flush();

  bool written = true;
  auto write = [&](const std::string& path, const std::string& content) {
    if (!write_output(path, content, &error)) {
      say(error);
      written = false;
    }
  };
  const std::optional<std::size_t> drawn = chosen ? chosen : peak ? peak : oom;
  if ((!options.svg_path.empty() || !options.pprof_path.empty()) && !drawn) {
    say(options.file + " holds no snapshot to draw");
    return 1;
  }
  if (!options.svg_path.empty())
    write(options.svg_path, attribution::icicle_svg(*document, document->snapshots[*drawn]));
  if (!options.pprof_path.empty()) {
    const std::optional<std::string> profile =
        attribution::pprof_profile(*document, document->snapshots[*drawn], &error);
    if (profile) {
      write(options.pprof_path, *profile);
    } else {
      say(options.pprof_path + ": " + error);
      written = false;
    }
  }
  if (!options.html_path.empty()) {
    const bool chosen_peak = chosen && document->snapshots[*chosen].what == "peak";
    const bool chosen_oom = chosen && document->snapshots[*chosen].what == "oom";
    write(options.html_path, attribution::html_report(*document, chosen_peak ? chosen : peak,
                                                      chosen_oom ? chosen : oom));
  }
  if (!options.torch_path.empty()) {
    namespace model = gpumem::detail::attribution;
    write(options.torch_path,
          model::torch_snapshot(*document, options.torch_form == "list" ? model::TorchForm::list
                                                                        : model::TorchForm::dict));
  }
  return written ? 0 : 1;
}

}  // namespace

void add_attribution_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AttributionOptions>();
  CLI::App* command = app.add_subcommand(
      "attribution",
      "Show what held GPU memory at a peak or an out-of-memory failure, from an attribution "
      "document (gpumem run --attribute)");
  set_usage(*command, "gpumem attribution [OPTIONS] FILE");
  command->footer(
      "E.g. gpumem attribution snap.json --html report.html\nWithout --snapshot it shows the "
      "highest peak and the first out-of-memory "
      "failure; --svg and --pprof draw the highest peak (else the failure).");
  command
      ->add_option("file", options->file,
                   "An attribution document (gpumem.attribution/1) or a PyTorch memory "
                   "snapshot (the pickle that torch.cuda.memory's _dump_snapshot writes)")
      ->required();
  number_option(
      *command,
      command->add_option("--top", options->top, "How many stacks the table names (default 10)"),
      {"stacks", 1, 1000000, true});
  command->add_option("--snapshot", options->snapshot,
                      "Which snapshot: peak (the highest), oom (the first failure) or an index");
  command->add_option("--svg", options->svg_path,
                      "Write an SVG icicle graph of the live memory by stack");
  command->add_option("--pprof", options->pprof_path,
                      "Write a gzipped pprof profile (inuse_space, inuse_objects) for go tool "
                      "pprof or speedscope");
  command->add_option("--html", options->html_path,
                      "Write a self-contained HTML report (timeline, icicles, block lists); "
                      "each output is a regular file or '-' (stdout, instead of the tables)");
  command->add_option("--torch-snapshot", options->torch_path,
                      "Write a PyTorch memory snapshot pickle (pytorch.org/memory_viz, "
                      "torch.cuda._memory_viz) of each device's highest peak");
  command
      ->add_option("--torch-form", options->torch_form,
                   "The snapshot's form: dict (segments and device_traces, the default) or list "
                   "(PyTorch 1.13's list of segments)")
      ->check(CLI::IsMember({"dict", "list"}));
  add_width_options(*command, options->width);
  command->callback([options, &exit_code] { exit_code = attribution_command(*options); });
}

}  // namespace gpumem::cli
