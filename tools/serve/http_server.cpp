#include "http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>

#include <list>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "basic_auth.hpp"
#include "tls_context.hpp"

namespace gpumem::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// What a connection is doing (make_room() says which give up their place first). Outside the
// anonymous namespace: Connection, declared in the header, has a member of this type.
enum class State { fresh, idle, reading, authenticating, writing, closing };

namespace {

constexpr std::chrono::milliseconds kLinger{1000};     // to drain a client before closing on it
constexpr std::size_t kMaxLingerBytes = 1 << 20;       // and at most this much of it
constexpr std::chrono::milliseconds kAcceptPause{50};  // when out of file descriptors
// A response whose client has taken none of its bytes for this long is stuck (longer than
// TCP's shortest retransmission timeout, 200 ms, so a lost packet alone does not make it so).
constexpr std::chrono::milliseconds kStalled{250};

// Whether the request line at the start of `head` ends in a well-formed HTTP-version,
// "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3), whatever its numbers: an unsupported version is then
// answered 505, anything else malformed 400.
bool names_a_version(std::string_view head) {
  const std::size_t end = head.find("\r\n");
  if (end == std::string_view::npos) return false;
  const std::string_view line = head.substr(0, end);
  const std::size_t first = line.find(' ');
  const std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) return false;
  const std::string_view version = line.substr(last + 1);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return version.size() == 8 && version.starts_with("HTTP/") && digit(version[5]) &&
         version[6] == '.' && digit(version[7]);
}

}  // namespace

class Connection {
 public:
  virtual ~Connection() = default;
  virtual void close_now() = 0;

  State state = State::fresh;
  // When the exchange last moved: the connection was accepted, a request began or was answered,
  // the client took bytes of a response.
  Clock::time_point progress = Clock::now();
  // Writing: its client sent more before reading this answer (pipelining, which scrapers do not).
  bool ahead = false;
  std::string client;
  std::list<Connection*>::iterator position;
  bool registered = false;
};

struct HttpServer::Impl {
  Impl(const HttpLimits& limits_in, HttpHandler handler_in, const WebConfig& web)
      : limits(limits_in), handler(std::move(handler_in)), headers(web.headers) {}

  void accept();
  void on_accept(tcp::socket socket);
  bool make_room(const std::string& client);
  void refuse(tcp::socket socket);
  void enroll(Connection& connection);
  void forget(Connection& connection);

  // Declared before the io_context: connections unregister while it destroys them.
  HttpLimits limits;
  HttpHandler handler;
  std::map<std::string, std::string> headers;
  HttpStats stats;
  int port = 0;
  bool loopback = true;
  std::list<Connection*> connections;
  std::unordered_map<std::string, std::size_t> per_client;
  std::size_t refusing = 0;
  std::unique_ptr<asio::ssl::context> tls;

  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_pause{io};
  std::unique_ptr<BasicAuth> auth;  // its worker posts to `io`: stopped before it goes
};

namespace {

template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(HttpServer::Impl& server, Stream stream)
      : server_(server),
        stream_(std::move(stream)),
        timer_(server.io),
        buffer_(server.limits.max_request_bytes + 1024) {}
  ~Session() override { server_.forget(*this); }

  void start() {
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      wait_for_request(true);
    } else {
      enter(State::fresh, server_.limits.request_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](error_code error) {
                                if (error) return self->close_now();
                                self->wait_for_request(true);
                              });
    }
  }

  void close_now() override {
    if (closed_) return;
    closed_ = true;
    // What the client sent and nobody read would make closing reset the connection, and a
    // reset can destroy an answer still on its way: read it away first.
    std::size_t drained = 0;
    for (ssize_t got = 1; got > 0 && drained < kMaxLingerBytes; drained += std::size_t(got)) {
      got = ::recv(socket().native_handle(), drain_, sizeof drain_, MSG_DONTWAIT);
    }
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
    timer_.cancel();
    server_.forget(*this);
  }

 private:
  tcp::socket& socket() { return beast::get_lowest_layer(stream_); }

  // What the parser left in the buffer: on a failed request line, the whole of it.
  std::string_view unparsed() const {
    return {static_cast<const char*>(buffer_.data().data()), buffer_.size()};
  }

  void enter(State next, std::chrono::milliseconds timeout) {
    state = next;
    progress = Clock::now();
    timed_out_ = false;
    timer_.expires_after(timeout);
    timer_.async_wait([self = this->shared_from_this()](error_code error) {
      if (error || self->closed_) return;
      self->timed_out_ = true;
      // An unfinished request is told why (408); anything else is simply closed.
      if (self->state == State::reading) {
        error_code ignored;
        self->socket().cancel(ignored);
      } else {
        self->close_now();
      }
    });
  }

  // Idle: waits for the first byte of the next request (a fresh connection gets the request
  // timeout for it, a kept-alive one the idle timeout).
  void wait_for_request(bool first) {
    if (closed_) return;
    if (buffer_.size() > 0) return read_header();  // pipelined: already here
    enter(first ? State::fresh : State::idle,
          first ? server_.limits.request_timeout : server_.limits.idle_timeout);
    stream_.async_read_some(buffer_.prepare(1024),
                            [self = this->shared_from_this()](error_code error, std::size_t bytes) {
                              if (error) return self->close_now();
                              self->buffer_.commit(bytes);
                              self->read_header();
                            });
  }

  void read_header() {
    enter(State::reading, server_.limits.request_timeout);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.limits.max_request_bytes));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](error_code error, std::size_t) {
                              self->on_header(error);
                            });
  }

  void on_header(error_code error) {
    if (closed_) return;
    if (error) {
      if (timed_out_) return fail(http::status::request_timeout);
      if (error == http::error::header_limit || error == http::error::buffer_overflow) {
        return fail(http::status::request_header_fields_too_large);
      }
      if (error == http::error::bad_version && names_a_version(unparsed())) {
        return fail(http::status::http_version_not_supported);
      }
      if (error.category() == http::make_error_code(http::error::end_of_stream).category() &&
          error != http::error::end_of_stream && error != http::error::partial_message) {
        return fail(http::status::bad_request);
      }
      return close_now();  // the client went away
    }
    const auto& request = parser_->get();
    if (request.version() != 10 && request.version() != 11) {
      return fail(http::status::http_version_not_supported);
    }
    const std::string_view target = request.target();
    if (target.empty() || target.front() != '/') return fail(http::status::bad_request);
    const http::verb method = request.method();
    if (method != http::verb::get && method != http::verb::head) {
      return fail(http::status::method_not_allowed, {{"Allow", "GET, HEAD"}});
    }
    // A transfer coding that does not end in chunked leaves the body's length unknown
    // (RFC 9112 6.3): the request cannot be delimited, so it is malformed.
    if (request.count(http::field::transfer_encoding) > 0 && !parser_->chunked()) {
      return fail(http::status::bad_request);
    }
    const auto length = parser_->content_length();
    if ((length && *length > 0) || parser_->chunked()) {
      return fail(http::status::payload_too_large);
    }
    if (server_.auth) return authorize(request[http::field::authorization]);
    serve();
  }

  void authorize(std::string_view authorization) {
    const std::optional<bool> known = server_.auth->quick_check(authorization);
    if (known) return *known ? serve() : unauthorized();
    enter(State::authenticating, server_.limits.request_timeout);
    auto self = this->shared_from_this();
    const bool queued = server_.auth->check(authorization, [self](bool allowed) {
      asio::post(self->server_.io, [self, allowed] {
        if (self->closed_) return;
        allowed ? self->serve() : self->unauthorized();
      });
    });
    if (!queued) fail(http::status::service_unavailable);  // a flood of new credentials
  }

  void unauthorized() {
    ++server_.stats.unauthorized_requests;
    respond(http::status::unauthorized, "text/plain; charset=utf-8", "Unauthorized\n", false,
            {{"WWW-Authenticate", "Basic"}});
  }

  void serve() {
    ++server_.stats.requests;
    std::string path(parser_->get().target());
    path.erase(std::min(path.find('?'), path.size()));
    HttpResponse answer;
    try {
      answer = server_.handler(path);
    } catch (...) {
      answer = HttpResponse{500, "text/plain; charset=utf-8", "Internal Server Error\n"};
    }
    respond(static_cast<http::status>(answer.status), answer.content_type, std::move(answer.body),
            parser_->get().keep_alive());
  }

  void fail(http::status status,
            std::initializer_list<std::pair<std::string_view, std::string_view>> extra = {}) {
    ++server_.stats.bad_requests;
    std::string body(http::obsolete_reason(status));
    respond(status, "text/plain; charset=utf-8", body + "\n", false, extra);
  }

  void respond(http::status status, std::string_view content_type, std::string body,
               bool keep_alive,
               std::initializer_list<std::pair<std::string_view, std::string_view>> extra = {}) {
    const bool head =
        parser_ && parser_->is_header_done() && parser_->get().method() == http::verb::head;
    response_ = {};
    response_.version(11);
    response_.result(status);
    response_.set(http::field::server, "gpumem");
    response_.set(http::field::content_type, content_type);
    for (const auto& [name, value] : server_.headers) response_.set(name, value);
    for (const auto& [name, value] : extra) response_.set(name, value);
    response_.keep_alive(keep_alive);
    response_.content_length(body.size());
    if (!head) response_.body() = std::move(body);
    enter(State::writing, server_.limits.write_timeout);
    error_code ignored;
    ahead = buffer_.size() > 0 || socket().available(ignored) > 0;
    serializer_.emplace(response_);
    write(keep_alive);
  }

  // Writes as much as the client takes at a time, so that `progress` tells a response being
  // read from one nobody reads.
  void write(bool keep_alive) {
    http::async_write_some(
        stream_, *serializer_,
        [self = this->shared_from_this(), keep_alive](error_code error, std::size_t bytes) {
          if (error || self->closed_) return self->close_now();
          if (bytes > 0) {
            self->progress = Clock::now();
            self->server_.stats.response_bytes.fetch_add(bytes, std::memory_order_relaxed);
          }
          if (!self->serializer_->is_done()) return self->write(keep_alive);
          self->serializer_.reset();
          keep_alive ? self->wait_for_request(false) : self->finish();
        });
  }

  // Closes after the response: TLS says goodbye; plain TCP stops sending and reads what the
  // client still sends, so that closing does not reset the connection before it read the answer.
  void finish() {
    enter(State::closing, kLinger);
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      error_code ignored;
      socket().shutdown(tcp::socket::shutdown_send, ignored);
      linger();
    } else {
      stream_.async_shutdown([self = this->shared_from_this()](error_code) { self->close_now(); });
    }
  }

  void linger() {
    socket().async_read_some(asio::buffer(drain_),
                             [self = this->shared_from_this()](error_code error, std::size_t got) {
                               self->drained_ += got;
                               if (error || self->drained_ > kMaxLingerBytes) {
                                 return self->close_now();
                               }
                               self->linger();
                             });
  }

  HttpServer::Impl& server_;
  Stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> response_;
  std::optional<http::response_serializer<http::string_body>> serializer_;
  bool timed_out_ = false;
  bool closed_ = false;
  std::size_t drained_ = 0;
  char drain_[4096];
};

// A connection refused at the cap: it gets its 503 and is drained briefly before the close.
class Refusal : public std::enable_shared_from_this<Refusal> {
 public:
  Refusal(HttpServer::Impl& server, tcp::socket socket)
      : server_(server), socket_(std::move(socket)), timer_(server.io) {
    ++server_.refusing;
  }
  ~Refusal() { --server_.refusing; }

  void start(bool tls) {
    static constexpr std::string_view kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nServer: gpumem\r\nContent-Type: text/plain; "
        "charset=utf-8\r\nContent-Length: 20\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
        "Service Unavailable\n";
    error_code ignored;
    socket_.non_blocking(true, ignored);
    // A plaintext 503 means nothing to a TLS client: it just sees the connection close.
    if (!tls) socket_.write_some(asio::buffer(kBusy), ignored);
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    timer_.expires_after(kLinger);
    timer_.async_wait([self = shared_from_this()](error_code error) {
      if (!error) self->socket_.close(error);
    });
    drain();
  }

 private:
  void drain() {
    socket_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](error_code error, std::size_t got) {
                              self->drained_ += got;
                              if (error || self->drained_ > kMaxLingerBytes) {
                                self->timer_.cancel();
                                self->socket_.close(error);
                                return;
                              }
                              self->drain();
                            });
  }

  HttpServer::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  std::size_t drained_ = 0;
  char drain_[4096];
};

}  // namespace

void HttpServer::Impl::enroll(Connection& connection) {
  connection.position = connections.insert(connections.end(), &connection);
  connection.registered = true;
  ++per_client[connection.client];
  ++stats.open_connections;
}

void HttpServer::Impl::forget(Connection& connection) {
  if (!connection.registered) return;
  connection.registered = false;
  connections.erase(connection.position);
  auto count = per_client.find(connection.client);
  if (count != per_client.end() && --count->second == 0) per_client.erase(count);
  --stats.open_connections;
}

bool HttpServer::Impl::make_room(const std::string& client) {
  const auto count = per_client.find(client);
  const bool client_full =
      count != per_client.end() && count->second >= limits.max_connections_per_client;
  const Clock::time_point now = Clock::now();
  // How readily a connection gives up its place, lowest first; -1: never (a password check is
  // running: a bounded queue's worth of them). A connection that has answered and is only
  // saying goodbye costs nobody anything. Then what scrapers do not do: a response nobody reads,
  // requests sent ahead of their answers. Then an idle kept-alive connection (its client retries
  // on a new one), before a request not yet complete or not yet begun (a newcomer's, perhaps,
  // even under a flood); last, a response being read.
  auto rank = [now](const Connection& c) {
    switch (c.state) {
      case State::closing:
        return 0;
      case State::writing:
        return c.ahead || now - c.progress >= kStalled ? 1 : 4;
      case State::idle:
        return 2;
      case State::fresh:
      case State::reading:
        return 3;
      case State::authenticating:
        return -1;
    }
    return -1;
  };
  // Finished connections go first, whoever holds them. Otherwise the client with the most
  // connections gives one up (the newcomer's own when it is at its cap), so that a flood from
  // one address only ever displaces its own: of its connections, the lowest rank, then the one
  // whose exchange has not moved for the longest.
  using Key = std::tuple<int, std::ptrdiff_t, int, Clock::time_point>;
  auto key = [&](const Connection& c, int r) {
    if (r == 0) return Key{0, 0, 0, c.progress};
    return Key{1, -static_cast<std::ptrdiff_t>(per_client.at(c.client)), r, c.progress};
  };
  Connection* victim = nullptr;
  Key victim_key{};
  for (Connection* connection : connections) {
    if (client_full && connection->client != client) continue;
    const int r = rank(*connection);
    if (r < 0) continue;
    const Key k = key(*connection, r);
    if (victim == nullptr || k < victim_key) {
      victim = connection;
      victim_key = k;
    }
  }
  if (victim == nullptr) return false;
  ++stats.evicted_connections;
  victim->close_now();
  return true;
}

void HttpServer::Impl::refuse(tcp::socket socket) {
  ++stats.rejected_connections;
  // Refusals are bounded too: past that, the connection is simply closed.
  if (refusing >= limits.max_connections) return;
  std::make_shared<Refusal>(*this, std::move(socket))->start(tls != nullptr);
}

void HttpServer::Impl::on_accept(tcp::socket socket) {
  error_code error;
  const tcp::endpoint peer = socket.remote_endpoint(error);
  if (error) return;
  socket.set_option(tcp::no_delay(true), error);
  std::string client = peer.address().to_string();
  const auto count = per_client.find(client);
  const bool room =
      connections.size() < limits.max_connections &&
      (count == per_client.end() || count->second < limits.max_connections_per_client);
  if (!room && !make_room(client)) return refuse(std::move(socket));
  auto start = [&](auto session) {
    session->client = std::move(client);
    enroll(*session);
    session->start();
  };
  if (tls) {
    using TlsStream = asio::ssl::stream<tcp::socket>;
    start(std::make_shared<Session<TlsStream>>(*this, TlsStream(std::move(socket), *tls)));
  } else {
    start(std::make_shared<Session<tcp::socket>>(*this, std::move(socket)));
  }
}

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (error) {
      // Out of file descriptors or memory: wait a moment instead of spinning.
      accept_pause.expires_after(kAcceptPause);
      accept_pause.async_wait([this](error_code waited) {
        if (!waited) accept();
      });
      return;
    }
    on_accept(std::move(socket));
    accept();
  });
}

std::unique_ptr<HttpServer> HttpServer::create(const HttpLimits& limits, HttpHandler handler,
                                               const WebConfig& web, std::string* error) {
  auto impl = std::make_unique<Impl>(limits, std::move(handler), web);
  if (web.tls) {
    impl->tls = make_tls_context(*web.tls, error);
    if (!impl->tls) return nullptr;
  }
  if (!web.basic_auth_users.empty()) impl->auth = std::make_unique<BasicAuth>(web.basic_auth_users);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

bool HttpServer::listen(const ListenAddress& address, std::string* error) {
  Impl& impl = *impl_;
  const std::string where = address.host + ":" + address.port;
  const auto fail = [&](const std::string& why) {
    if (error != nullptr) *error = "cannot listen on " + where + ": " + why;
    return false;
  };
  error_code failure;
  tcp::resolver resolver(impl.io);
  auto endpoints = resolver.resolve(
      address.host, address.port, tcp::resolver::passive | tcp::resolver::numeric_service, failure);
  if (failure || endpoints.empty()) return fail(failure ? failure.message() : "no address");
  for (const auto& entry : endpoints) {
    error_code attempt;
    tcp::acceptor& acceptor = impl.acceptor;
    if (acceptor.is_open()) acceptor.close(attempt);
    acceptor.open(entry.endpoint().protocol(), attempt);
    if (!attempt) acceptor.set_option(tcp::acceptor::reuse_address(true), attempt);
    if (!attempt) acceptor.bind(entry.endpoint(), attempt);
    if (!attempt) acceptor.listen(asio::socket_base::max_listen_connections, attempt);
    failure = attempt;
    if (!attempt) break;
  }
  if (failure) return fail(failure.message());
  const tcp::endpoint bound = impl.acceptor.local_endpoint(failure);
  impl.port = bound.port();
  impl.loopback = bound.address().is_loopback();
  return true;
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

int HttpServer::port() const noexcept {
  return impl_->port;
}
bool HttpServer::tls() const noexcept {
  return impl_->tls != nullptr;
}
bool HttpServer::loopback() const noexcept {
  return impl_->loopback;
}
const HttpStats& HttpServer::stats() const noexcept {
  return impl_->stats;
}

void HttpServer::run(int stop_fd) {
  Impl& impl = *impl_;
  asio::posix::stream_descriptor stop(impl.io, ::dup(stop_fd));
  stop.async_wait(asio::posix::stream_descriptor::wait_read, [&impl](error_code) {
    error_code ignored;
    impl.acceptor.close(ignored);
    impl.accept_pause.cancel();
    // Copied: closing a connection unregisters it.
    const std::vector<Connection*> open(impl.connections.begin(), impl.connections.end());
    for (Connection* connection : open) connection->close_now();
    impl.io.stop();
  });
  impl.accept();
  impl.io.run();
}

}  // namespace gpumem::serve
