#include "http_server.hpp"

#include <crypt.h>
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
  explicit RunningServer(HttpLimits limits = {}, const WebConfig& web = {}) {
    std::string error;
    server_ = HttpServer::create(
        limits,
        [](std::string_view path) -> HttpResponse {
          if (path == "/metrics") return {200, "text/plain", "up 1\n"};
          // Big enough to keep a connection writing while its client does not read.
          if (path == "/big") return {200, "text/plain", std::string(64 << 20, 'x')};
          return {404, "text/plain", "Not Found\n"};
        },
        web, &error);
    if (!server_ || !server_->listen(ListenAddress{"127.0.0.1", "0"}, &error)) {
      throw std::runtime_error(error);
    }
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

std::string request(int port, std::string_view bytes, const char* source = nullptr) {
  RawClient client(port, source);
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

HttpResponse answer_ok(std::string_view) {
  return {200, "text/plain", "ok\n"};
}

TEST(HttpServer, AnAddressInUseIsRefusedWithItsReason) {
  std::string error;
  std::unique_ptr<HttpServer> first = HttpServer::create({}, answer_ok, {}, &error);
  ASSERT_TRUE(first) << error;
  ASSERT_TRUE(first->listen(ListenAddress{"127.0.0.1", "0"}, &error)) << error;
  const std::string port = std::to_string(first->port());

  std::unique_ptr<HttpServer> second = HttpServer::create({}, answer_ok, {}, &error);
  ASSERT_TRUE(second) << error;
  EXPECT_FALSE(second->listen(ListenAddress{"127.0.0.1", port}, &error));
  EXPECT_EQ(error, "cannot listen on 127.0.0.1:" + port + ": Address already in use");
  // No reason wanted: refused all the same.
  EXPECT_FALSE(second->listen(ListenAddress{"127.0.0.1", port}));
}

TEST(HttpServer, ACertificateThatCannotBeUsedIsRefusedBeforeAnyAddressIsTried) {
  WebConfig web;
  web.tls = TlsConfig{};
  web.tls->cert_file = "/nonexistent/server.crt";
  web.tls->key_file = "/nonexistent/server.key";
  std::string error;
  EXPECT_EQ(HttpServer::create({}, answer_ok, web, &error), nullptr);
  EXPECT_EQ(error, "cannot use the certificate /nonexistent/server.crt: No such file or directory");
  EXPECT_EQ(HttpServer::create({}, answer_ok, web), nullptr);
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
       {"garbage\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/11\r\n\r\n",
        "GET /metrics HTTP/1.1x\r\n\r\n", "GET /metrics HTTP/1\r\n\r\n", "GET /metrics\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", "\r\n\r\n"}) {
    std::string response = request(server.port(), bad);
    EXPECT_EQ(status_line(response), "HTTP/1.1 400 Bad Request") << bad;
  }
  EXPECT_EQ(server.stats().bad_requests.load(), 8u);
  // The server still serves after all that.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 200 OK");
}

TEST(HttpServer, AnswersWellFormedVersionsOtherThan1xWith505) {
  RunningServer server;
  for (std::string_view version : {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "HTTP/3.0"}) {
    std::string response =
        request(server.port(), "GET /metrics " + std::string(version) + "\r\nHost: x\r\n\r\n");
    EXPECT_EQ(status_line(response), "HTTP/1.1 505 HTTP Version Not Supported") << version;
  }
  // HTTP/2's connection preface, sent to an HTTP/1.1 server.
  EXPECT_EQ(status_line(request(server.port(), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")),
            "HTTP/1.1 505 HTTP Version Not Supported");
}

TEST(HttpServer, RejectsTransferCodingsThatDoNotEndInChunked) {
  RunningServer server;
  // The body's length is unknown: the request cannot be delimited (RFC 9112 6.3).
  for (std::string_view coding : {"xchunked", "chunked, gzip", "gzip", "chunkedx", ""}) {
    std::string response =
        request(server.port(), "GET /metrics HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: " +
                                   std::string(coding) + "\r\n\r\n");
    EXPECT_EQ(status_line(response), "HTTP/1.1 400 Bad Request") << coding;
  }
  // A chunked body is a body: refused as such.
  EXPECT_EQ(
      status_line(request(server.port(),
                          "GET /metrics HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")),
      "HTTP/1.1 413 Payload Too Large");
}

// Requests whose end two parsers could place differently (request smuggling): each is refused
// and the connection closed, so what follows it is never taken for a request.
TEST(HttpServer, RefusesAmbiguouslyDelimitedRequestsAndCloses) {
  RunningServer server;
  const std::string next = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (std::string_view head : {
           "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n",
           "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n",
           "Content-Length: 0\r\nContent-Length: 5\r\n",
           "Content-Length: 0, 5\r\n",
           "Content-Length: +0\r\n",
           "Content-Length : 0\r\n",
           "Content-Length: 0\r\n 5\r\n",  // obs-fold: "0 5"
           "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
       }) {
    std::string response = request(
        server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n" + std::string(head) + "\r\n" + next);
    EXPECT_EQ(status_line(response), "HTTP/1.1 400 Bad Request") << head;
    // One answer, then the close: the request after it was not served.
    EXPECT_EQ(response.find("HTTP/1.1", 1), std::string::npos) << head << response;
    EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos) << head;
  }
  // A folded line that makes the codings end in chunked: a body, refused as such, then closed.
  std::string folded = request(server.port(),
                               "GET /metrics HTTP/1.1\r\nTransfer-Encoding: gzip\r\n ,chunked\r\n"
                               "\r\n0\r\n\r\n" +
                                   next);
  EXPECT_EQ(status_line(folded), "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(folded.find("HTTP/1.1", 1), std::string::npos) << folded;
  EXPECT_EQ(server.stats().requests.load(), 0u);
}

// What RFC 9112 lets a server accept, and the one reading of it every parser shares: repeated
// equal lengths are one length (6.3), a folded line is its parts joined by a space (5.2). The
// request after each is answered on its own.
TEST(HttpServer, TakesRepeatedEqualLengthsAndFoldedLinesAsOne) {
  RunningServer server;
  for (std::string_view head : {"Content-Length: 0\r\nContent-Length: 0\r\n",
                                "Content-Length: 0, 0\r\n", "X-Folded: a\r\n b\r\n"}) {
    RawClient client(server.port());
    client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n" + std::string(head) +
                "\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string both = client.read_to_close();
    EXPECT_EQ(status_line(both), "HTTP/1.1 200 OK") << head;
    const std::size_t second = both.find("HTTP/1.1", 1);
    ASSERT_NE(second, std::string::npos) << head << both;
    EXPECT_EQ(status_line(both.substr(second)), "HTTP/1.1 200 OK") << head;
  }
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

// Until no client has taken any response bytes for `quiet` (at most 30 s).
void wait_until_no_progress(const RunningServer& server, std::chrono::milliseconds quiet) {
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  std::uint64_t last = server.stats().response_bytes.load();
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
    const std::uint64_t now = server.stats().response_bytes.load();
    if (now != last) {
      last = now;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since >= quiet) {
      return;
    }
  }
  ADD_FAILURE() << "the server kept writing for 30 s";
}

// A bcrypt hash of `password` made by libxcrypt at `cost`.
std::string bcrypt(const std::string& password, int cost) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (::crypt_gensalt_rn("$2b$", cost, nullptr, 0, setting, sizeof setting) == nullptr) return {};
  crypt_data data{};
  const char* hash = ::crypt_r(password.c_str(), setting, &data);
  return hash == nullptr ? std::string() : hash;
}

TEST(HttpServer, RefusesWithA503WhenEveryConnectionWaitsForAPasswordCheck) {
  HttpLimits limits;
  limits.max_connections = 1;
  WebConfig web;
  web.basic_auth_users = {{"prometheus", bcrypt("s3cr3t", 12)}};  // a few hundred ms a check
  RunningServer server(limits, web);
  // A wrong password (a right one would be remembered, and not checked again), then a newcomer
  // while the check runs: it is turned away, and can read why. Until the server has read the
  // request, the first connection still makes room: then again, waiting longer.
  std::unique_ptr<RawClient> checking;
  std::string refused;
  for (int attempt = 1; attempt <= 5 && !refused.starts_with("HTTP/1.1 503"); ++attempt) {
    checking = std::make_unique<RawClient>(server.port());
    checking->send(
        "GET /metrics HTTP/1.1\r\nAuthorization: Basic cHJvbWV0aGV1czp3cm9uZw==\r\n"
        "Connection: close\r\n\r\n");  // prometheus:wrong
    std::this_thread::sleep_for(attempt * 50ms);
    refused = request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n");
  }
  EXPECT_EQ(status_line(refused), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(body_of(refused), "Service Unavailable\n");
  EXPECT_GE(server.stats().rejected_connections.load(), 1u);
  EXPECT_EQ(status_line(checking->read_to_close()), "HTTP/1.1 401 Unauthorized");
}

TEST(HttpServer, AResponseNobodyReadsMakesRoom) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  auto first = stuck_writer(server.port());
  auto second = stuck_writer(server.port());
  wait_for_requests(server, 2);
  // Both are stuck writing what their clients do not read: one of them makes room at once.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  EXPECT_EQ(server.stats().rejected_connections.load(), 0u);
}

TEST(HttpServer, AConnectionThatAnsweredAndIsClosingMakesRoom) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  // Each asks to close after its answer, reads it, and keeps its end open: the server has
  // said goodbye and waits (up to a second) for the client's.
  RawClient first(server.port());
  RawClient second(server.port());
  for (RawClient* client : {&first, &second}) {
    client->send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(body_of(client->read_to_close()), "up 1\n");
  }
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  EXPECT_EQ(server.stats().rejected_connections.load(), 0u);
}

TEST(HttpServer, AClosingConnectionGoesBeforeAnotherClientsIdleOne) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient scraper(server.port(), "127.0.0.1");
  scraper.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(scraper.read_response()), "up 1\n");  // kept alive, idle
  RawClient closing(server.port(), "127.0.0.2");
  closing.send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(body_of(closing.read_to_close()), "up 1\n");
  // A newcomer takes the place of the connection that only says goodbye, not the scraper's.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n", "127.0.0.3")),
            "HTTP/1.1 200 OK");
  scraper.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(scraper.read_response()), "up 1\n");
}

TEST(HttpServer, IdleConnectionsMakeRoomBeforeUnfinishedOnes) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient slow(server.port());
  slow.send("GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n");  // a slowloris, the older
  std::this_thread::sleep_for(20ms);
  RawClient idle(server.port());
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");  // kept alive, now idle
  // At the cap: the idle one goes (its client retries on a new connection), although the
  // unfinished request began before.
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(idle.read_to_close(), "");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  slow.send("\r\n");
  EXPECT_EQ(body_of(slow.read_response()), "up 1\n");
}

TEST(HttpServer, UnfinishedRequestsMakeRoomOldestFirst) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient older(server.port());
  older.send("GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n");
  std::this_thread::sleep_for(20ms);
  RawClient newer(server.port());
  newer.send("GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n");
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(older.read_to_close(), "");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  newer.send("\r\n");
  EXPECT_EQ(body_of(newer.read_response()), "up 1\n");
}

TEST(HttpServer, RequestsSentAheadOfTheirAnswersMakeRoomBeforeAnIdleConnection) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient idle(server.port());
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");
  // Two requests at once, the first for a response too big to be taken while nobody reads.
  auto ahead = std::make_unique<RawClient>(server.port());
  ahead->shrink_receive_buffer();
  ahead->send("GET /big HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
  wait_for_requests(server, 2);
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");
}

TEST(HttpServer, AResponseNobodyReadsGoesBeforeAnIdleConnection) {
  HttpLimits limits;
  limits.max_connections = 2;
  RunningServer server(limits);
  RawClient idle(server.port());
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");
  auto stuck = stuck_writer(server.port());
  wait_for_requests(server, 2);
  // Its client has taken nothing for twice the server's 250 ms: the server filled the socket's
  // buffers and then made no progress. Told by the server's own count of bytes taken (a fixed
  // wait was once too short under ThreadSanitizer on a loaded machine). A quiet count alone is
  // not enough: a server thread the machine did not run for that long counts nothing either,
  // and on its next turn writes what the socket took meanwhile, just before the newcomer's
  // accept (the idle connection went, once, under ThreadSanitizer). So the quiet must outlast
  // a request answered on the idle connection: an answer means the server's loop has run and
  // taken every write the socket allowed.
  for (int round = 0;; ++round) {
    wait_until_no_progress(server, 500ms);
    const std::uint64_t before = server.stats().response_bytes.load();
    idle.send("GET /metrics HTTP/1.1\r\n\r\n");
    const std::string answer = idle.read_response();
    ASSERT_EQ(body_of(answer), "up 1\n");
    // The server counts the answer's bytes just after its client may have read them.
    std::uint64_t taken = 0;
    for (int i = 0;
         i < 3000 && (taken = server.stats().response_bytes.load() - before) < answer.size(); ++i) {
      std::this_thread::sleep_for(1ms);
    }
    if (taken == answer.size()) break;  // the answer's own bytes only: the stuck one took none
    ASSERT_LT(round, 20) << "the stuck client kept taking bytes";
  }
  EXPECT_EQ(body_of(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n")), "up 1\n");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  // The idle one is still there.
  idle.send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(idle.read_response()), "up 1\n");
}

TEST(HttpServer, CapsTheConnectionsOfOneClient) {
  HttpLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 2;
  RunningServer server(limits);
  auto first = stuck_writer(server.port(), "127.0.0.2");
  auto second = stuck_writer(server.port(), "127.0.0.2");
  wait_for_requests(server, 2);
  // A third from that address takes the place of one of its own.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n", "127.0.0.2")),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  // Another client is not held up by that one, and displaces nothing.
  EXPECT_EQ(status_line(request(server.port(), "GET /metrics HTTP/1.0\r\n\r\n", "127.0.0.1")),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(server.stats().evicted_connections.load(), 1u);
  EXPECT_EQ(server.stats().rejected_connections.load(), 0u);
}

}  // namespace
}  // namespace gpumem::serve
