// The exporter's HTTP(S) server, on Boost.Beast and Boost.Asio: one thread, asynchronous
// sockets, a deadline on every connection, so no client can hold up another.
//
// At the connection cap a new connection takes the place of one that has answered and is only
// closing; else the client address with the most connections gives one up (the newcomer's own
// when that address is at its cap): a stuck one (a response nobody reads, or requests sent ahead
// of their answers), then an idle one, then an unfinished one, then one whose response is being
// read; the one that has not moved for the longest first.
// Only connections waiting for a password check are never closed; when those are all there
// is, a newcomer is refused with a 503 it can read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "listen_address.hpp"
#include "web_config.hpp"

namespace gpumem::serve {

struct HttpLimits {
  std::size_t max_connections = 64;
  std::size_t max_connections_per_client = 16;
  std::size_t max_request_bytes = 8192;             // request line and headers; bodies are refused
  std::chrono::milliseconds request_timeout{5000};  // from a request's first byte to its end
  std::chrono::milliseconds idle_timeout{60000};    // a kept-alive connection with no request
  std::chrono::milliseconds write_timeout{10000};   // to send a whole response
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called for GET and HEAD with the path (query removed), once authenticated. Runs on the
// server's thread: it must not block.
using HttpHandler = std::function<HttpResponse(std::string_view path)>;

struct HttpStats {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> rejected_connections{0};
  std::atomic<std::uint64_t> evicted_connections{0};
  std::atomic<std::uint64_t> bad_requests{0};
  std::atomic<std::uint64_t> unauthorized_requests{0};
  // What the clients have taken of the responses: it stops moving while no client reads.
  std::atomic<std::uint64_t> response_bytes{0};
  std::atomic<std::uint64_t> open_connections{0};
};

class HttpServer {
 public:
  // A server for `handler`, with TLS and basic authentication when `web` asks for them, not yet
  // listening; nullptr when web's certificate or key cannot be used (an invalid configuration),
  // with the reason in `error` when given.
  static std::unique_ptr<HttpServer> create(const HttpLimits& limits, HttpHandler handler,
                                            const WebConfig& web, std::string* error = nullptr);
  // Binds `address` and listens (once, before run()); false when the address cannot be listened
  // on (in use, not local), with the reason in `error` when given.
  bool listen(const ListenAddress& address, std::string* error = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Where it listens (after listen()).
  int port() const noexcept;
  bool tls() const noexcept;
  // Whether it listens on a loopback address only.
  bool loopback() const noexcept;
  const HttpStats& stats() const noexcept;

  // Serves until `stop_fd` (an eventfd or pipe) becomes readable; closes every connection then.
  void run(int stop_fd);

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpumem::serve
