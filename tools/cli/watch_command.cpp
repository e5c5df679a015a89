// `gpumem watch`: a live view of the GPUs; redraws in place on a terminal, appends plain lines
// otherwise, and keeps each device's peak since the watch began.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <iostream>
#include <limits>
#include <memory>
#include <thread>

#include "commands.hpp"
#include "format.hpp"
#include "gpumem/peak.hpp"
#include "snapshot_view.hpp"
#include "text_width.hpp"
#include "usage.hpp"
#include "width_options.hpp"

namespace gpumem::cli {
namespace {

std::string clock_time() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

std::string plain_lines(const std::vector<DeviceSnapshot>& snapshot, const PeakByDevice& peaks) {
  std::string out;
  const std::string now = clock_time();
  for (const DeviceSnapshot& device : snapshot) {
    out += now + " GPU " + std::to_string(device.info.device) + " " + printable(device.info.name) +
           ": used " + format_bytes(static_cast<std::int64_t>(device.info.memory.used)) + " of " +
           format_bytes(static_cast<std::int64_t>(device.info.memory.total)) + ", peak " +
           format_bytes(peaks.at(device.info.device)) + ", " +
           std::to_string(device.processes.size()) +
           (device.processes.size() == 1 ? " process" : " processes");
    for (std::size_t i = 0; i < device.processes.size(); ++i) {
      const ProcessRow& process = device.processes[i];
      out += (i == 0 ? ": " : ", ") + std::to_string(process.pid) + " " +
             (process.name.empty() ? "?" : printable(process.name)) + " " +
             (process.used_bytes ? format_bytes(static_cast<std::int64_t>(*process.used_bytes))
                                 : "n/a");
    }
    out += "\n";
  }
  return out;
}

}  // namespace

void add_watch_command(CLI::App& app, int& exit_code) {
  struct Options {
    double interval_s = 1.0;
    long count = 0;
    WidthFlags width;
  };
  auto options = std::make_shared<Options>();
  CLI::App* watch = app.add_subcommand("watch", "Watch the GPUs' memory and processes live");
  number_option(*watch,
                watch->add_option("-i,--interval", options->interval_s,
                                  "Seconds between refreshes (default 1)"),
                {"seconds", 0.01, 86400});
  number_option(
      *watch,
      watch->add_option("-n,--count", options->count, "Stop after this many refreshes (0: never)"),
      {"refreshes", 0, std::numeric_limits<double>::infinity(), true});
  add_width_options(*watch, options->width);
  watch->callback([options, &exit_code] {
    const bool terminal = ::isatty(STDOUT_FILENO) == 1;
    // Between refreshes a native sampler per device keeps the peak, so a spike shorter than the
    // refresh interval still shows.
    std::vector<std::unique_ptr<PeakCounter>> counters;
    PeakByDevice peaks;
    const auto interval = std::chrono::duration<double>(options->interval_s);
    auto next = std::chrono::steady_clock::now();
    for (long refresh = 0; options->count == 0 || refresh < options->count; ++refresh) {
      const std::vector<DeviceSnapshot> snapshot = take_snapshot();
      for (const DeviceSnapshot& device : snapshot) {
        const int ordinal = device.info.device;
        if (peaks.find(ordinal) == peaks.end()) {
          counters.push_back(std::make_unique<PeakCounter>(ordinal, Source::sampled));
          peaks[ordinal] = 0;
        }
        std::int64_t& peak = peaks[ordinal];
        peak = std::max(peak, static_cast<std::int64_t>(device.info.memory.used));
        for (const auto& counter : counters) {
          // Readings are of the device used (total - free); shown here as NVML's used, without
          // the driver's reservation.
          if (counter->device() == ordinal) {
            peak = std::max(peak, counter->read().peak_bytes -
                                      static_cast<std::int64_t>(device.info.memory.reserved));
          }
        }
      }
      if (snapshot.empty()) {
        std::cout << (terminal ? "\033[H\033[2J" : "") << clock_time() << " " << no_device_message()
                  << "\n";
      } else if (terminal) {
        const TableOptions table = stdout_table_options(options->width);
        const std::string title = "gpumem watch, every " + format_seconds(options->interval_s) +
                                  " (Ctrl-C to stop)    " + clock_time();
        std::cout << "\033[H\033[2J"
                  << (table.width
                          ? truncate_to_width(title, *table.width, table.style.unicode ? "…" : "~")
                          : title)
                  << "\n\n"
                  << snapshot_table(snapshot, peaks, table);
      } else {
        std::cout << plain_lines(snapshot, peaks);
      }
      std::cout.flush();
      if (options->count != 0 && refresh + 1 >= options->count) break;
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
      std::this_thread::sleep_until(next);
    }
    exit_code = 0;
  });
}

}  // namespace gpumem::cli
