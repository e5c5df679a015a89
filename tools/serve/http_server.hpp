// A small HTTP/1.1 server for /metrics: one thread, one epoll loop, non-blocking sockets.
//
// Why not prometheus-cpp's Exposer: civetweb gives each connection a worker thread until its
// request completes or times out, so as many slow clients as there are workers stall every
// scrape, and connections beyond the workers queue instead of being refused. Here no client
// can hold up another: every socket is non-blocking, each connection has a deadline, the
// number of connections and the bytes buffered per connection are capped, and the only thing a
// request can do is ask the handler for one of its fixed pages.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "listen_address.hpp"

namespace gpumem::serve {

struct HttpLimits {
  std::size_t max_connections = 64;
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

// Called for GET and HEAD with the path (query removed). Runs on the server's thread.
using HttpHandler = std::function<HttpResponse(std::string_view path)>;

struct HttpStats {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> rejected_connections{0};
  std::atomic<std::uint64_t> bad_requests{0};
};

class HttpServer {
 public:
  // Binds and listens; nullptr with the reason in `error` on failure.
  static std::unique_ptr<HttpServer> listen(const ListenAddress& address, const HttpLimits& limits,
                                            HttpHandler handler, std::string& error);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const noexcept { return port_; }
  const HttpStats& stats() const noexcept { return stats_; }

  // Serves until `stop_fd` (an eventfd or pipe) becomes readable; closes every connection then.
  void run(int stop_fd);

 private:
  struct Connection;
  HttpServer(int listen_fd, int port, const HttpLimits& limits, HttpHandler handler);

  int listen_fd_;
  int port_;
  HttpLimits limits_;
  HttpHandler handler_;
  HttpStats stats_;
};

}  // namespace gpumem::serve
