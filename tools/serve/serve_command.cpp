// `gpumem serve`: the Prometheus exporter.
#include "serve_command.hpp"

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cerrno>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <tuple>

#include <CLI/CLI.hpp>

#include "collection_loop.hpp"
#include "collector.hpp"
#include "duration.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/printable_text.hpp"
#include "gpumem/internal/spool.hpp"
#include "gpumem/publish.hpp"
#include "help_page.hpp"
#include "http_server.hpp"
#include "usage.hpp"

namespace gpumem::serve {
namespace {

using namespace std::chrono_literals;

struct ServeOptions {
  std::string listen = "127.0.0.1:9400";
  std::string interval = "10ms";
  std::string window = "30s";
  std::string retention = "5m";
  std::string collect_interval = "1s";
  std::vector<std::string> spools;
  std::string host;
  std::string web_config;
  std::string proc = "/proc";
  std::string containers = "/var/log/containers";
  std::size_t max_connections = 64;
  std::size_t max_connections_per_client = 16;
  bool per_client_given = false;
  std::string request_timeout = "5s";
  std::string idle_timeout = "60s";
  std::string write_timeout = "10s";
  std::size_t max_request_bytes = 8192;
};

// The shortest and longest values that make sense; anything else is a typo.
constexpr auto kMinInterval = 100us;
constexpr auto kMinCollectInterval = 10ms;
constexpr auto kMinTimeout = 10ms;

int stop_event = -1;  // the eventfd SIGTERM and SIGINT write to

extern "C" void on_stop_signal(int) {
  const int saved_errno = errno;  // the interrupted code must see its own
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = ::write(stop_event, &one, sizeof one);
  errno = saved_errno;
}

int usage_error(const std::string& message) {
  // Messages quote arguments and the web configuration's contents: shown through printable().
  std::cerr << "gpumem serve: " << detail::printable(message) << "\n";
  return 2;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Every connection costs a descriptor: take what the hard limit allows.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int run_serve(const ServeOptions& options) {
  auto address = parse_listen_address(options.listen);
  if (!address) {
    return usage_error("invalid --listen '" + options.listen +
                       "': expected ADDRESS:PORT such as 127.0.0.1:9400 or [::1]:9400");
  }
  auto interval = parse_duration(options.interval);
  auto window = parse_duration(options.window);
  auto retention = parse_duration(options.retention);
  auto collect_interval = parse_duration(options.collect_interval);
  auto request_timeout = parse_duration(options.request_timeout);
  auto idle_timeout = parse_duration(options.idle_timeout);
  auto write_timeout = parse_duration(options.write_timeout);
  for (const auto& [flag, text, value] :
       {std::tuple{"--interval", options.interval, interval},
        std::tuple{"--window", options.window, window},
        std::tuple{"--retention", options.retention, retention},
        std::tuple{"--collect-interval", options.collect_interval, collect_interval},
        std::tuple{"--request-timeout", options.request_timeout, request_timeout},
        std::tuple{"--idle-timeout", options.idle_timeout, idle_timeout},
        std::tuple{"--write-timeout", options.write_timeout, write_timeout}}) {
    if (!value) {
      return usage_error(std::string("invalid ") + flag + " '" + text +
                         "': expected a duration such as 500us, 10ms, 1s or 30s");
    }
  }
  if (*interval < kMinInterval) return usage_error("--interval must be at least 100us");
  if (*window < *interval) return usage_error("--window must be at least --interval");
  if (*collect_interval < kMinCollectInterval) {
    return usage_error("--collect-interval must be at least 10ms");
  }
  if (*retention < 1s) return usage_error("--retention must be at least 1s");
  if (*request_timeout < kMinTimeout || *idle_timeout < kMinTimeout ||
      *write_timeout < kMinTimeout) {
    return usage_error(
        "--request-timeout, --idle-timeout and --write-timeout must be at least 10ms");
  }
  if (options.per_client_given && options.max_connections_per_client > options.max_connections) {
    return usage_error("--max-connections-per-client must not exceed --max-connections");
  }

  WebConfig web;
  if (!options.web_config.empty()) {
    std::string error;
    auto loaded = load_web_config(options.web_config, &error);
    if (!loaded) return usage_error("invalid --web.config.file: " + error);
    web = std::move(*loaded);
  }

  CollectorOptions collector_options;
  collector_options.host = options.host.empty() ? host_name() : options.host;
  collector_options.interval = *interval;
  collector_options.window = *window;
  collector_options.retention = std::chrono::duration_cast<std::chrono::seconds>(*retention);
  collector_options.proc = options.proc;
  collector_options.containers = options.containers;
  for (const auto& spool : options.spools) collector_options.spools.emplace_back(spool);
  if (collector_options.spools.empty()) {
    collector_options.spools.push_back(default_spool_directory());
  }
  // The rule publishers apply: a spool that others could have made or can write holds records
  // anyone may have forged. A missing one is read once it appears (and checked then).
  for (const auto& spool : collector_options.spools) {
    if (std::string why = detail::spool_directory_refusal(spool); !why.empty()) {
      return usage_error("refusing the spool directory " + spool.string() + ": " + why +
                         " (see docs/serving.md, \"Publishing traces from programs\")");
    }
  }

  HttpLimits limits;
  limits.max_connections = options.max_connections;
  limits.max_connections_per_client =
      std::min(options.max_connections_per_client, options.max_connections);
  limits.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*request_timeout);
  limits.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*idle_timeout);
  limits.write_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*write_timeout);
  limits.max_request_bytes = options.max_request_bytes;
  raise_descriptor_limit();

  // The handler runs on the server's thread only, after both are set below.
  const HttpStats* stats = nullptr;
  std::unique_ptr<CollectionLoop> loop;
  std::uint64_t scrapes = 0;
  HttpHandler handler = [&](std::string_view path) -> HttpResponse {
    if (path == "/") return HttpResponse{200, "text/html; charset=utf-8", help_page()};
    if (path != "/metrics") return HttpResponse{404, "text/plain; charset=utf-8", "Not Found\n"};
    const CollectionLoop::Latest latest = loop->latest();
    ServingSample serving;
    serving.scrapes = ++scrapes;
    serving.collections = latest.collections;
    serving.collection_age_seconds = latest.age_seconds;
    serving.collection_duration_seconds = latest.duration_seconds;
    serving.rejected_connections = stats->rejected_connections.load();
    serving.evicted_connections = stats->evicted_connections.load();
    serving.bad_requests = stats->bad_requests.load();
    serving.unauthorized_requests = stats->unauthorized_requests.load();
    serving.response_bytes = stats->response_bytes.load();
    if (latest.snapshot && latest.snapshot->live_peaks) {
      // Live, not as collected: a spike since the last collection shows now. No lock, no driver.
      const WindowPeak& peaks = *latest.snapshot->live_peaks;
      for (std::size_t i = 0; i < latest.snapshot->devices.size(); ++i) {
        serving.window_peaks.push_back(peaks.peak(i));
      }
    }
    static const Snapshot kNone;
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        render_exposition(latest.snapshot ? *latest.snapshot : kNone, serving)};
  };

  std::string error;
  auto server = HttpServer::create(limits, handler, web, &error);
  // A certificate or key that cannot be used is an invalid configuration (status 2); an address
  // that cannot be listened on is not (status 1).
  if (!server) return usage_error("invalid --web.config.file: " + error);
  if (!server->listen(*address, &error)) {
    std::cerr << "gpumem serve: " << detail::printable(error) << "\n";
    return 1;
  }
  stats = &server->stats();
  // Devices are found and read on the loop's thread: a driver that hangs holds up readings,
  // not the server.
  auto devices = std::make_shared<std::size_t>(0);
  loop = std::make_unique<CollectionLoop>(
      [collector = std::shared_ptr<Collector>(), collector_options, devices]() mutable {
        if (!collector) {
          collector = std::make_shared<Collector>(collector_options);
          *devices = collector->device_count();
        }
        return collector->collect();
      },
      *collect_interval);
  const bool collected = loop->wait_for_first(10s);
  if (collected && *devices == 0) {
    std::string why = last_diagnostic();
    std::cerr << "gpumem serve: no GPU found"
              << (why.empty() ? "" : " (" + detail::printable(why) + ")")
              << "; serving the exporter's own metrics and published traces\n";
  } else if (!collected) {
    std::cerr << "gpumem serve: the driver has not answered in 10 s; serving, with "
                 "gpumem_exporter_collection_age_seconds telling how old the readings are\n";
  }
  const bool secured = server->tls() && !web.basic_auth_users.empty();
  if (!server->loopback() && !secured) {
    std::cerr << "gpumem serve: warning: listening on " << detail::printable(options.listen)
              << " beyond loopback "
              << "without " << (server->tls() ? "basic authentication" : "TLS")
              << (server->tls() || !web.basic_auth_users.empty() ? "" : " and basic authentication")
              << "; anyone who reaches it reads this node's GPU use (see --web.config.file)\n";
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
  std::cout << "gpumem serve: listening on " << (server->tls() ? "https" : "http") << "://"
            << shown_host << ":" << server->port() << "/metrics ("
            << (collected ? std::to_string(*devices) : "?") << " GPUs, interval "
            << format_duration(*interval) << ", window " << format_duration(*window) << ", spool "
            << collector_options.spools.front().string() << ")" << std::endl;
  server->run(stop_event);
  server.reset();
  loop.reset();

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
  command
      ->add_option("--interval", options->interval,
                   "How often the sampler reads used memory (at least 100us)")
      ->capture_default_str();
  command
      ->add_option("--window", options->window,
                   "The peak gauges cover this much time; set it to the scrape interval")
      ->capture_default_str();
  command
      ->add_option("--collect-interval", options->collect_interval,
                   "How often devices, processes and spools are read for scrapes (at least 10ms)")
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
      ->add_option("--web.config.file", options->web_config,
                   "TLS and basic authentication, in the format of Prometheus' exporter toolkit")
      ->check(CLI::ExistingFile);
  cli::number_option(
      *command,
      command
          ->add_option("--max-connections", options->max_connections,
                       "Open connections at most; finished, idle and stuck ones make room first")
          ->capture_default_str(),
      {"connections", 1, 65536, true});
  cli::number_option(
      *command,
      command
          ->add_option("--max-connections-per-client", options->max_connections_per_client,
                       "Open connections from one client address at most")
          ->capture_default_str(),
      {"connections", 1, 65536, true});
  command
      ->add_option("--request-timeout", options->request_timeout,
                   "From a request's first byte to its end (and a new connection's first byte)")
      ->capture_default_str();
  command
      ->add_option("--idle-timeout", options->idle_timeout,
                   "How long a kept-alive connection may wait for its next request")
      ->capture_default_str();
  command->add_option("--write-timeout", options->write_timeout, "To send a whole response")
      ->capture_default_str();
  cli::number_option(*command,
                     command
                         ->add_option("--max-request-bytes", options->max_request_bytes,
                                      "Request line and headers at most (larger get 431)")
                         ->capture_default_str(),
                     {"bytes", 1024, 65536, true});
  command
      ->add_option("--proc", options->proc,
                   "Where processes are read (the host's /proc mounted elsewhere in a container)")
      ->capture_default_str();
  command
      ->add_option("--kubelet-containers", options->containers,
                   "The kubelet's container log links, for pod, namespace and container names")
      ->capture_default_str();
  CLI::Option* per_client = command->get_option("--max-connections-per-client");
  command->callback([options, per_client, &exit_code] {
    options->per_client_given = per_client->count() > 0;
    exit_code = run_serve(*options);
  });
}

}  // namespace gpumem::serve
