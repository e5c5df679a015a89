#include "http_server.hpp"

#include <sys/eventfd.h>

#include <gtest/gtest.h>

#include <thread>

#include "serve/http_client.hpp"

namespace gpumem::serve {
namespace {

using gpumem::testing::body_of;
using gpumem::testing::RawClient;
using gpumem::testing::status_line;
using namespace std::chrono_literals;

// A server on an ephemeral loopback port, run on its own thread for the test's lifetime.
class RunningServer {
 public:
  explicit RunningServer(HttpLimits limits = {}) {
    std::string error;
    server_ = HttpServer::listen(
        ListenAddress{"127.0.0.1", "0"}, limits,
        [](std::string_view path) -> HttpResponse {
          if (path == "/metrics") return {200, "text/plain", "up 1\n"};
          // Big enough to keep a connection writing while its client does not read.
          if (path == "/big") return {200, "text/plain", std::string(64 << 20, 'x')};
          return {404, "text/plain", "Not Found\n"};
        },
        error);
    if (!server_) throw std::runtime_error(error);
    stop_ = ::eventfd(0, EFD_CLOEXEC);
    thread_ = std::thread([this] { server_->run(stop_); });
  }
  ~RunningServer() {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(stop_, &one, sizeof one);
    thread_.join();
    ::close(stop_);
  }
  int port() const { return server_->port(); }
  const HttpStats& stats() const { return server_->stats(); }

 private:
  std::unique_ptr<HttpServer> server_;
  int stop_ = -1;
  std::thread thread_;
};

std::string request(int port, std::string_view bytes) {
  RawClient client(port);
  client.send(bytes);
  return client.read_to_close();
}

TEST(HttpServer, ServesMetrics) {
  RunningServer server;
  std::string response = request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(status_line(response), "HTTP/1.1 200 OK");
  EXPECT_EQ(body_of(response), "up 1\n");
  EXPECT_NE(response.find("Content-Length: 5\r\n"), std::string::npos);
}

TEST(HttpServer, IgnoresTheQueryAndAnswersHeadWithoutABody) {
  RunningServer server;
  std::string response =
      request(server.port(), "HEAD /metrics?x=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_line(response), "HTTP/1.1 200 OK");
  EXPECT_EQ(body_of(response), "");
}

TEST(HttpServer, KeepsAliveAndAnswersPipelinedRequests) {
  RunningServer server;
  RawClient client(server.port());
  client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_line(client.read_response()), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_line(client.read_response()), "HTTP/1.1 200 OK");
  client.send("GET /metrics HTTP/1.1\r\n\r\n");
  std::string third = client.read_response();
  EXPECT_EQ(body_of(third), "up 1\n");
  EXPECT_EQ(server.stats().requests.load(), 3u);
}

TEST(HttpServer, AnswersOtherPathsWith404) {
  RunningServer server;
  EXPECT_EQ(status_line(request(server.port(), "GET /../../etc/passwd HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 404 Not Found");
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics/x HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 404 Not Found");
}

TEST(HttpServer, RefusesOtherMethodsAndBodies) {
  RunningServer server;
  std::string post = request(server.port(), "POST /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos);
  EXPECT_EQ(
      status_line(request(server.port(), "GET /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd")),
      "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(status_line(request(server.port(),
                                "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")),
            "HTTP/1.1 413 Payload Too Large");
}

TEST(HttpServer, RejectsMalformedRequests) {
  RunningServer server;
  for (std::string_view bad :
       {"garbage\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n",
        "GET /metrics\r\n\r\n", "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", "\r\n\r\n"}) {
    std::string response = request(server.port(), bad);
    EXPECT_TRUE(response.starts_with("HTTP/1.1 400") || response.starts_with("HTTP/1.1 505"))
        << bad << " -> " << response;
  }
  EXPECT_EQ(server.stats().bad_requests.load(), 6u);
  // The server still serves after all that.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 200 OK");
}

TEST(HttpServer, RefusesOversizedHeaders) {
  HttpLimits limits;
  limits.max_request_bytes = 1024;
  RunningServer server(limits);
  std::string huge = "GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(64 * 1024, 'a');
  std::string response = request(server.port(), huge);
  EXPECT_EQ(status_line(response), "HTTP/1.1 431 Request Header Fields Too Large");
}

TEST(HttpServer, ASlowClientDoesNotBlockAnother) {
  RunningServer server;
  RawClient slow(server.port());
  slow.send("GET /met");  // and nothing more for now
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  slow.send("rics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(body_of(slow.read_to_close()), "up 1\n");
}

TEST(HttpServer, TimesOutARequestThatNeverEnds) {
  HttpLimits limits;
  limits.request_timeout = 200ms;
  RunningServer server(limits);
  RawClient slow(server.port());
  slow.send("GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n");
  EXPECT_EQ(status_line(slow.read_to_close()), "HTTP/1.1 408 Request Timeout");
}

TEST(HttpServer, ClosesAConnectionThatSendsNothing) {
  HttpLimits limits;
  limits.request_timeout = 200ms;
  RunningServer server(limits);
  RawClient idle(server.port());
  EXPECT_EQ(idle.read_to_close(), "");
}

// A connection busy writing a response its client does not read.
std::unique_ptr<RawClient> stuck_writer(int port, const char* source = nullptr) {
  auto client = std::make_unique<RawClient>(port, source);
  client->shrink_receive_buffer();
  client->send("GET /big HTTP/1.1\r\n\r\n");
  return client;
}

// Until the server has taken `count` requests in all.
void wait_for_requests(const RunningServer& server, std::uint64_t count) {
  for (int i = 0; i < 500 && server.stats().requests.load() < count; ++i) {
    std::this_thread::sleep_for(10ms);
  }
}

std::string until_status(int port, std::string_view status, const char* source = nullptr) {
  std::string response;
  for (int attempt = 0; attempt < 100 && !response.starts_with(status); ++attempt) {
    RawClient client(port, source);
    client.send("GET /metrics HTTP/1.0\r\n\r\n");
    response = client.read_to_close();
    if (!response.starts_with(status)) std::this_thread::sleep_for(10ms);
  }
  return response;
}

TEST(HttpServer, RefusesWithA503WhenEveryConnectionIsBusy) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  auto first = stuck_writer(server.port());
  auto second = stuck_writer(server.port());
  wait_for_requests(server, 2);
  // Both are writing once the server has read their requests; a third is turned away, and can
  // read why.
  std::string third = until_status(server.port(), "HTTP/1.1 503");
  EXPECT_EQ(status_line(third), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(body_of(third), "Service Unavailable\n");
  EXPECT_GE(server.stats().rejected_connections.load(), 1u);
  // A slot frees up when one of them goes.
  first.reset();
  EXPECT_EQ(status_line(until_status(server.port(), "HTTP/1.1 200")), "HTTP/1.1 200 OK");
}

TEST(HttpServer, IdleConnectionsMakeRoomFirst) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient idle(server.port());
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");  // kept alive, now idle
  auto busy = stuck_writer(server.port());
  wait_for_requests(server, 2);
  // At the cap: the idle one is closed to make room, the busy one is left alone.
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(idle.read_to_close(), "");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  EXPECT_EQ(server.stats().rejected_connections.load(), 0u);
}

TEST(HttpServer, UnfinishedRequestsMakeRoomWhenNoneIsIdle) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient slow(server.port());
  slow.send("GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n");  // a slowloris
  auto busy = stuck_writer(server.port());
  wait_for_requests(server, 1);
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(slow.read_to_close(), "");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
}

TEST(HttpServer, CapsTheConnectionsOfOneClient) {
  HttpLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 2;
  RunningServer server(limits);
  auto first = stuck_writer(server.port(), "127.0.0.2");
  auto second = stuck_writer(server.port(), "127.0.0.2");
  wait_for_requests(server, 2);
  EXPECT_EQ(status_line(until_status(server.port(), "HTTP/1.1 503", "127.0.0.2")),
            "HTTP/1.1 503 Service Unavailable");
  // Another client is not held up by that one.
  EXPECT_EQ(status_line(until_status(server.port(), "HTTP/1.1 200", "127.0.0.1")),
            "HTTP/1.1 200 OK");
}

}  // namespace
}  // namespace gpumem::serve
