// `gpumem list`: every visible GPU, its memory and the processes using it.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "gpumem/device.hpp"
#include "gpumem/diagnostics.hpp"
#include "snapshot_view.hpp"
#include "text_width.hpp"
#include "width_options.hpp"

namespace gpumem::cli {

void add_list_command(CLI::App& app, int& exit_code) {
  struct Options {
    bool json = false;
    bool csv = false;
    WidthFlags width;
  };
  auto options = std::make_shared<Options>();
  CLI::App* list = app.add_subcommand("list", "List the GPUs, their memory and their processes");
  auto* json = list->add_flag("--json", options->json, "Print JSON (schema gpumem.list/1)");
  list->add_flag("--csv", options->csv, "Print CSV, one row per device and process")
      ->excludes(json);
  add_width_options(*list, options->width);
  list->callback([options, &exit_code] {
    const std::vector<DeviceSnapshot> snapshot = take_snapshot();
    if (options->json) {
      nlohmann::ordered_json document = {{"schema", "gpumem.list/1"},
                                         {"driver_version", driver_version()},
                                         {"devices", snapshot_json(snapshot)},
                                         {"diagnostics", diagnostics()}};
      // Process names are bytes from the kernel: what is not UTF-8 is shown as U+FFFD.
      std::cout << document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                << "\n";
    } else if (options->csv) {
      std::cout << snapshot_csv(snapshot);
    } else if (!snapshot.empty()) {
      std::cout << "Driver " << printable(driver_version()) << "\n"
                << snapshot_table(snapshot, {}, stdout_table_options(options->width));
    }
    // No GPU is an answer, not a failure: the lists are empty and stderr says why.
    if (snapshot.empty()) std::cerr << "gpumem: " << no_device_message() << "\n";
    exit_code = 0;
  });
}

}  // namespace gpumem::cli
