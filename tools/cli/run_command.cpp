// `gpumem run [options] -- COMMAND ARGS...`: /usr/bin/time for GPU memory.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "attribution/views.hpp"
#include "child_process.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "gpumem/device.hpp"
#include "gpumem/internal/environment.hpp"
#include "gpumem/internal/run_engine.hpp"
#include "gpumem/internal/run_rank.hpp"
#include "inject_library.hpp"
#include "output_file.hpp"
#include "path_template.hpp"
#include "run_attribution.hpp"
#include "run_budget.hpp"
#include "run_report.hpp"
#include "snapshot_view.hpp"
#include "svg_plot.hpp"
#include "terminal.hpp"
#include "text_width.hpp"
#include "usage.hpp"
#include "width_options.hpp"

extern char** environ;

namespace gpumem::cli {
namespace {

struct RunOptions {
  std::string json_path;
  std::string timeline_path;
  std::string attribute_path;  // --attribute: the gpumem.attribution/1 document
  std::string html_path;       // --html: its report
  std::string plot_path;
  std::string host;  // the node's name in the report; default: the host name
  double interval_s = 0.01;
  std::vector<int> devices;
  std::vector<PeakBudget> budgets;  // --max-peak
  WidthFlags width;                 // of the summary on stderr
  Mode mode = Mode::automatic;
  double wait_descendants_s = 60;
  bool no_wait_descendants = false;
  std::vector<std::string> command;
};

void fail(const std::string& message) {
  std::cerr << "gpumem run: " << printable(message) << "\n";  // it may quote any argument
}

std::string joined_command(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

bool write_reports(const RunOptions& options, const RunResult& result,
                   const std::vector<BudgetVerdict>& budgets,
                   const attribution::Document* attribution) {
  bool written = true;
  auto write = [&](const std::string& path, const std::string& content) {
    std::string error;
    if (!path.empty() && !write_output(path, content, &error)) {
      fail(error);
      written = false;
    }
  };
  // Names (hosts, processes) may hold bytes that are not UTF-8: shown as U+FFFD, never a crash.
  write(options.json_path,
        run::run_document_text(run::run_document(result, budget_entries(budgets))));
  write(options.timeline_path, timeline_csv(result.timeline));
  if (attribution != nullptr) {
    write(options.attribute_path,
          attribution::document_json(*attribution)
                  .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
              "\n");
    if (!options.html_path.empty()) {
      std::string error;
      const auto peak = attribution::choose_snapshot(*attribution, "peak", &error);
      const auto oom = attribution::choose_snapshot(*attribution, "oom", &error);
      write(options.html_path, attribution::html_report(*attribution, peak, oom));
    }
  }
  write(options.plot_path, svg_plot(result, result.timeline));
  if (const std::uint64_t lost = result.timeline_events_lost;
      lost > 0 && (!options.timeline_path.empty() || !options.plot_path.empty())) {
    fail("the timeline misses " + std::to_string(lost) +
         " memory events (read too late); the peaks count every event");
  }
  return written;
}

int run_command(RunOptions options) {
  if (options.command.empty()) {
    fail("no command given (usage: gpumem run [options] -- COMMAND [ARGS...])");
    return 2;
  }
  const RankInfo own = run::own_rank();
  if (options.host.empty()) options.host = run::host_name();
  // Per-node file names ('run-{host}-{rank}.json'), resolved before anything runs.
  const PathValues values{options.host, own.rank, own.local_rank, static_cast<int>(::getpid())};
  for (std::string* path : {&options.json_path, &options.timeline_path, &options.plot_path,
                            &options.attribute_path, &options.html_path}) {
    std::string error;
    const std::optional<std::string> expanded = expand_path(*path, values, &error);
    if (!expanded) {
      fail(error);
      return 2;
    }
    *path = *expanded;
  }
  // Every output is checked before anything of the command runs: a refusal leaves it unrun.
  if (std::string error; !check_outputs({{"--json", options.json_path},
                                         {"--timeline", options.timeline_path},
                                         {"--plot", options.plot_path},
                                         {"--attribute", options.attribute_path},
                                         {"--html", options.html_path}},
                                        &error)) {
    fail(error);
    return 2;
  }
  std::vector<DeviceInfo> measured;
  const std::vector<DeviceInfo> visible = gpumem::devices();
  for (const DeviceInfo& device : visible) {
    if (options.devices.empty() || std::find(options.devices.begin(), options.devices.end(),
                                             device.device) != options.devices.end()) {
      measured.push_back(device);
    }
  }
  for (int wanted : options.devices) {
    if (std::none_of(visible.begin(), visible.end(),
                     [&](const DeviceInfo& device) { return device.device == wanted; })) {
      fail("--device " + std::to_string(wanted) + ": no such GPU (" +
           std::to_string(visible.size()) + " visible)");
      return 2;
    }
  }
  if (const std::string error = budget_device_error(options.budgets, measured); !error.empty()) {
    fail(error);
    return 2;
  }

  RunResult result;
  result.command = options.command;
  result.requested = options.mode;
  result.interval_s = options.interval_s;
  result.host = options.host;
  result.own_rank = own;

  // No GPU at all (no NVML, no CUDA driver): nothing to measure, exactly or otherwise. Exact
  // mode refuses before the command runs; the others run it and say why nothing was measured.
  if (visible.empty()) {
    result.no_gpu = true;
    result.no_gpu_reason = no_device_reason();
    const std::string why =
        "no GPU measured" + (result.no_gpu_reason.empty() ? "" : ": " + result.no_gpu_reason);
    if (options.mode == Mode::exact) {
      fail("--mode exact: " + why + " (the command was not run)");
      return 2;
    }
    if (options.mode == Mode::automatic) result.fallback_reason = why;
  }

  const bool attributing = !options.attribute_path.empty() || !options.html_path.empty();
  run::Engine engine(std::move(measured),
                     !options.timeline_path.empty() || !options.plot_path.empty() || attributing);
  // Exact mode injects gpumem's library into every CUDA process of the command.
  if (options.mode != Mode::sampled && !result.no_gpu) {
    std::string why;
    if (const std::string theirs = support::env_text("CUDA_INJECTION64_PATH"); !theirs.empty()) {
      why = "CUDA_INJECTION64_PATH is already set (" + theirs + ") and is left alone";
    } else if (const std::string inject = find_inject_library(&why); !inject.empty()) {
      engine.count_exactly(inject, &why);
    }
    if (!engine.exact()) {
      if (options.mode == Mode::exact) {
        fail("--mode exact: " + why);
        return 2;
      }
      result.fallback_reason = why;
    }
  }

  if (attributing) {
    std::string why;
    if (!engine.exact()) {
      fail("--attribute/--html need exact counting: " +
           (options.mode == Mode::sampled ? std::string("--mode sampled sees no allocations")
                                          : result.fallback_reason));
      return 2;
    }
    if (!engine.collect_attribution(&why)) {
      fail(why);
      return 2;
    }
  }
  engine.baseline();
  ChildProcess child;
  const auto unix_now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  result.start_unix_s = unix_now();
  int start_status = 0;
  std::string start_error;
  if (!child.start(options.command, engine.child_environment(environ), start_status, start_error)) {
    fail(start_error);
    return start_status;
  }
  engine.start(child.pid(), options.interval_s);
  result.exit = child.wait();
  if (!options.no_wait_descendants) {
    // Orphans the command left running are still its work: gpumem adopted them.
    result.descendants_wait_s = options.wait_descendants_s;
    result.descendants_running = child.wait_for_descendants(options.wait_descendants_s);
  } else {
    // Not waited for, but not unseen: the ones still running are named, and the summary says
    // that the figures stop at the command's exit.
    result.descendants_waited = false;
    result.descendants_running = child.wait_for_descendants(0);
  }
  engine.stop();
  result.end_unix_s = unix_now();
  engine.finish(result);
  const std::vector<BudgetVerdict> budgets = judge_budgets(result, options.budgets);
  const bool over_budget = std::any_of(budgets.begin(), budgets.end(),
                                       [](const BudgetVerdict& v) { return v.exceeded; });
  // Exact counts that no reported figure holds: say so, and why.
  std::string unmeasured;
  for (const run::UnmeasuredDevice& device : result.unmeasured_devices) {
    unmeasured += "gpumem: the command also used a device gpumem does not measure (UUID " +
                  device.uuid + ", peak " + format_bytes(device.peak) +
                  " counted): it is outside gpumem's own CUDA_VISIBLE_DEVICES or left out by "
                  "--device\n";
  }
  const std::optional<std::size_t> width = chosen_width(options.width, STDERR_FILENO);
  const TextStyle text_style = output_style(STDERR_FILENO);
  std::optional<attribution::Document> attribution;
  if (attributing) {
    std::vector<std::string> warnings;
    attribution = engine.attribution(joined_command(options.command), options.host, &warnings);
    for (const std::string& warning : warnings) unmeasured += "gpumem: " + warning + "\n";
    unmeasured += attribution_summary(*attribution, 5, {width, text_style});
  }
  // The verdicts last, where a CI log's reader looks first.
  if (!options.budgets.empty() && result.no_gpu)
    unmeasured += "gpumem: --max-peak: no GPU measured, so no budget was checked\n";
  unmeasured += budget_text(budgets);
  const attribution::Document* document = attribution ? &*attribution : nullptr;
  const SummaryStyle style{width, text_style.unicode};
  if (options.mode == Mode::exact && result.measured != Measured::exact) {
    std::cerr << summary_text(result, style)
              << (style.width ? wrap_lines(unmeasured, *style.width) : unmeasured);
    fail("--mode exact: " + std::to_string(result.escaped_processes) + " process" +
         (result.escaped_processes == 1 ? "" : "es") + " escaped exact counting (" +
         result.fallback_reason + "); the command's own status was " +
         std::to_string(result.exit.exit_code));
    write_reports(options, result, budgets, document);
    return 2;
  }

  std::cerr << summary_text(result, style)
            << (style.width ? wrap_lines(unmeasured, *style.width) : unmeasured);
  const bool written = write_reports(options, result, budgets, document);
  // The command's status is the answer; a report that could not be written turns success into 1,
  // a peak over its budget into over_budget_status.
  if (result.exit.exit_code != 0) return result.exit.exit_code;
  if (over_budget) return over_budget_status;
  return written ? 0 : 1;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Run a command and report its GPU memory peak (exact where CUPTI works)");
  set_usage(*run, "gpumem run [OPTIONS] -- COMMAND [ARGS...]");
  run->add_option("--json", options->json_path,
                  "Write the summary as JSON (gpumem.run/1); in this and the other file names "
                  "{host}, {rank}, {local_rank} and {pid} are replaced. Every output is a "
                  "regular file (new or replaced) or '-' (stdout), refused otherwise");
  run->add_option("--timeline", options->timeline_path, "Write every sample as CSV");
  run->add_option("--plot", options->plot_path, "Write an SVG chart of memory over time");
  run->add_option("--attribute", options->attribute_path,
                  "Write which code held the memory at each process's peak and at an "
                  "out-of-memory failure (gpumem.attribution/1 JSON); needs exact counting");
  run->add_option("--html", options->html_path,
                  "Write the attribution as an offline HTML report (timeline, icicles, blocks)");
  run->add_option("--host", options->host,
                  "The node's name in the report and in {host} (default: the host name)");
  number_option(*run,
                run->add_option("-i,--interval", options->interval_s,
                                "Seconds between samples (default 0.01)"),
                {"seconds", 0.001, 3600});
  number_option(
      *run,
      run->add_option("-d,--device", options->devices,
                      "Measure only this CUDA ordinal (repeatable; default: all)"),
      {"ordinal", 0, std::numeric_limits<double>::infinity(), true, "a CUDA device ordinal"})
      ->allow_extra_args(false);
  enum_option<Mode>(
      *run,
      run->add_option("-m,--mode", options->mode,
                      "How to count: exact, sampled or auto (default: auto)"),
      {{"exact", Mode::exact}, {"sampled", Mode::sampled}, {"auto", Mode::automatic}});
  number_option(*run,
                run->add_option("--wait-descendants", options->wait_descendants_s,
                                "After the command exits, wait this many seconds for the processes "
                                "it left running (default 60)"),
                {"seconds", 0, 1e6});
  run->add_flag("--no-wait-descendants", options->no_wait_descendants,
                "Stop when the command exits, whatever it left running");
  add_width_options(*run, options->width);
  run->add_option_function<std::vector<std::string>>(
         "--max-peak",
         [options](const std::vector<std::string>& values) {
           for (const std::string& value : values) {
             std::string error;
             const std::optional<PeakBudget> budget = parse_budget(value, &error);
             if (!budget) throw CLI::ValidationError("--max-peak " + value + ": " + error);
             options->budgets.push_back(*budget);
           }
         },
         "Exit with status 3 when the command's peak on a device exceeds SIZE (\"2 GiB\", "
         "\"1.5GB\"); DEVICE=SIZE for one CUDA ordinal (repeatable). The command's own failure "
         "status comes first")
      ->type_name("[DEVICE=]SIZE")
      ->allow_extra_args(false);
  // Everything from the command's name on belongs to the command, flags included.
  run->prefix_command();
  run->callback([options, run, &exit_code] {
    options->command = run->remaining();
    // CLI11 hands an unknown option on as the command's first word.
    if (!options->command.empty() && options->command.front().rfind('-', 0) == 0) {
      throw_unknown_option(options->command.front());
    }
    if (options->command.empty()) throw_missing_argument("COMMAND");
    exit_code = run_command(*options);
  });
}

}  // namespace gpumem::cli
