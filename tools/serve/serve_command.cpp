// `gpumem serve`: the Prometheus exporter.
#include <sys/eventfd.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <tuple>

#include <CLI/CLI.hpp>

#include "../cli/commands.hpp"
#include "collector.hpp"
#include "duration.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/publish.hpp"
#include "help_page.hpp"
#include "http_server.hpp"

namespace gpumem::cli {
namespace {

struct ServeOptions {
  std::string listen = "127.0.0.1:9400";
  std::string interval = "10ms";
  std::string window = "30s";
  std::string retention = "5m";
  std::vector<std::string> spools;
  std::string host;
  std::size_t max_connections = 64;
};

int stop_event = -1;  // the eventfd SIGTERM and SIGINT write to

extern "C" void on_stop_signal(int) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = ::write(stop_event, &one, sizeof one);
}

int usage_error(const std::string& message) {
  std::cerr << "gpumem serve: " << message << "\n";
  return 2;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

int run_serve(const ServeOptions& options) {
  using namespace gpumem::serve;
  auto address = parse_listen_address(options.listen);
  if (!address) {
    return usage_error("invalid --listen '" + options.listen +
                       "': expected ADDRESS:PORT such as 127.0.0.1:9400 or [::1]:9400");
  }
  auto interval = parse_duration(options.interval);
  auto window = parse_duration(options.window);
  auto retention = parse_duration(options.retention);
  for (const auto& [flag, text, value] :
       {std::tuple{"--interval", options.interval, interval},
        std::tuple{"--window", options.window, window},
        std::tuple{"--retention", options.retention, retention}}) {
    if (!value) {
      return usage_error(std::string("invalid ") + flag + " '" + text +
                         "': expected a duration such as 500us, 10ms, 1s or 30s");
    }
  }
  if (*window < *interval) return usage_error("--window must be at least --interval");
  if (options.max_connections == 0) return usage_error("--max-connections must be at least 1");

  CollectorOptions collector_options;
  collector_options.host = options.host.empty() ? host_name() : options.host;
  collector_options.interval = *interval;
  collector_options.window = *window;
  collector_options.retention = std::chrono::duration_cast<std::chrono::seconds>(*retention);
  for (const auto& spool : options.spools) collector_options.spools.emplace_back(spool);
  if (collector_options.spools.empty()) {
    collector_options.spools.push_back(default_spool_directory());
  }

  HttpLimits limits;
  limits.max_connections = options.max_connections;
  // The handler runs on the server's thread only, after both are set below.
  const HttpStats* stats = nullptr;
  std::unique_ptr<Collector> collector;
  HttpHandler handler = [&](std::string_view path) -> HttpResponse {
    if (path == "/") return HttpResponse{200, "text/html; charset=utf-8", help_page()};
    if (path != "/metrics") return HttpResponse{404, "text/plain; charset=utf-8", "Not Found\n"};
    Snapshot snapshot = collector->collect();
    snapshot.exporter.rejected_connections = stats->rejected_connections.load();
    snapshot.exporter.bad_requests = stats->bad_requests.load();
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        render_exposition(snapshot)};
  };

  std::string error;
  auto server = HttpServer::listen(*address, limits, handler, error);
  if (!server) {
    std::cerr << "gpumem serve: " << error << "\n";
    return 1;
  }
  stats = &server->stats();
  collector = std::make_unique<Collector>(collector_options);
  if (collector->device_count() == 0) {
    std::string why = last_diagnostic();
    std::cerr << "gpumem serve: no GPU found" << (why.empty() ? "" : " (" + why + ")")
              << "; serving the exporter's own metrics and published traces\n";
  }

  stop_event = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_event < 0) {
    std::cerr << "gpumem serve: cannot create an eventfd\n";
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction old_term {
  }, old_int{};
  ::sigaction(SIGTERM, &action, &old_term);
  ::sigaction(SIGINT, &action, &old_int);

  std::string shown_host =
      address->host.find(':') != std::string::npos ? "[" + address->host + "]" : address->host;
  std::cout << "gpumem serve: listening on http://" << shown_host << ":" << server->port()
            << "/metrics (" << collector->device_count() << " GPUs, interval "
            << format_duration(*interval) << ", window " << format_duration(*window) << ", spool "
            << collector_options.spools.front().string() << ")" << std::endl;
  server->run(stop_event);

  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::close(stop_event);
  stop_event = -1;
  std::cout << "gpumem serve: stopped" << std::endl;
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* command = app.add_subcommand(
      "serve", "Serve device memory and its peaks over a sliding window to Prometheus (/metrics)");
  command->add_option("--listen", options->listen, "ADDRESS:PORT to listen on")
      ->capture_default_str();
  command->add_option("--interval", options->interval, "How often the sampler reads used memory")
      ->capture_default_str();
  command
      ->add_option("--window", options->window,
                   "The peak gauges cover this much time; set it to the scrape interval")
      ->capture_default_str();
  command->add_option(
      "--spool", options->spools,
      "Directory programs publish traces to (repeatable; default $GPUMEM_SPOOL_DIR, "
      "$XDG_RUNTIME_DIR/gpumem or /tmp/gpumem-UID)");
  command
      ->add_option("--retention", options->retention,
                   "How long the results of an exited program stay exported")
      ->capture_default_str();
  command->add_option("--host-label", options->host, "The host label (default: the host name)");
  command
      ->add_option("--max-connections", options->max_connections,
                   "Open connections at most; more are refused with 503")
      ->capture_default_str();
  command->callback([options, &exit_code] { exit_code = run_serve(*options); });
}

}  // namespace gpumem::cli
