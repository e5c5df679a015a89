#include "http_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "http_request.hpp"

namespace gpumem::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string format_response(const HttpResponse& response, bool head_only, bool keep_alive) {
  std::string text = "HTTP/1.1 " + std::to_string(response.status) + " ";
  text += reason(response.status);
  text += "\r\nContent-Type: " + response.content_type;
  text += "\r\nContent-Length: " + std::to_string(response.body.size());
  if (response.status == 405) text += "\r\nAllow: GET, HEAD";
  text += keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
  if (!head_only) text += response.body;
  return text;
}

std::string error_response(int status) {
  HttpResponse response{status, "text/plain; charset=utf-8", std::string(reason(status)) + "\n"};
  return format_response(response, false, false);
}

}  // namespace

struct HttpServer::Connection {
  std::string input;
  std::string output;
  std::size_t written = 0;
  bool writing = false;
  bool close_after_write = false;
  Clock::time_point deadline;
};

std::unique_ptr<HttpServer> HttpServer::listen(const ListenAddress& address,
                                               const HttpLimits& limits, HttpHandler handler,
                                               std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int status = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found);
      status != 0) {
    error = "cannot resolve " + address.host + ": " + ::gai_strerror(status);
    return nullptr;
  }
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  bool ok = fd >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
            ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
  int saved = errno;
  ::freeaddrinfo(found);
  if (!ok) {
    if (fd >= 0) ::close(fd);
    error = "cannot listen on " + address.host + ":" + address.port + ": " + std::strerror(saved);
    return nullptr;
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<HttpServer>(new HttpServer(fd, port, limits, std::move(handler)));
}

HttpServer::HttpServer(int listen_fd, int port, const HttpLimits& limits, HttpHandler handler)
    : listen_fd_(listen_fd), port_(port), limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  ::close(listen_fd_);
}

void HttpServer::run(int stop_fd) {
  int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll < 0) return;
  auto watch = [epoll](int op, int fd, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.fd = fd;
    ::epoll_ctl(epoll, op, fd, &event);
  };
  watch(EPOLL_CTL_ADD, listen_fd_, EPOLLIN);
  watch(EPOLL_CTL_ADD, stop_fd, EPOLLIN);

  std::map<int, Connection> connections;
  bool accepting = true;
  Clock::time_point resume_accepting{};

  auto close_connection = [&](int fd) {
    ::epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections.erase(fd);
  };
  // Queues a response; reading stops until it is sent, which bounds what a client can buffer.
  auto respond = [&](int fd, Connection& c, std::string text, bool close_after) {
    c.output = std::move(text);
    c.written = 0;
    c.writing = true;
    c.close_after_write = close_after;
    c.deadline = Clock::now() + limits_.write_timeout;
    watch(EPOLL_CTL_MOD, fd, EPOLLOUT);
  };
  auto fail = [&](int fd, Connection& c, int status) {
    stats_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    respond(fd, c, error_response(status), true);
  };
  // Answers the first complete request in the buffer, if there is one.
  auto serve_buffered = [&](int fd, Connection& c) {
    std::size_t end = find_head_end(c.input);
    if (end == std::string::npos) {
      if (c.input.size() > limits_.max_request_bytes) fail(fd, c, 431);
      return;
    }
    if (end > limits_.max_request_bytes) return fail(fd, c, 431);
    HttpRequest request = parse_request_head(std::string_view(c.input).substr(0, end));
    c.input.erase(0, end);
    if (request.error_status != 0) return fail(fd, c, request.error_status);
    stats_.requests.fetch_add(1, std::memory_order_relaxed);
    HttpResponse response;
    try {
      response = handler_(request.path);
    } catch (...) {
      response = HttpResponse{500, "text/plain; charset=utf-8", "Internal Server Error\n"};
    }
    bool keep_alive = request.keep_alive && response.status < 400;
    respond(fd, c, format_response(response, request.head_only, keep_alive), !keep_alive);
  };
  auto accept_all = [&] {
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: pause accepting for a moment instead of spinning on the queue.
          accepting = false;
          resume_accepting = Clock::now() + std::chrono::milliseconds(100);
          watch(EPOLL_CTL_MOD, listen_fd_, 0);
        }
        return;
      }
      if (connections.size() >= limits_.max_connections) {
        stats_.rejected_connections.fetch_add(1, std::memory_order_relaxed);
        std::string busy = error_response(503);
        [[maybe_unused]] ssize_t ignored = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
        ::close(fd);
        continue;
      }
      Connection& c = connections[fd];
      c.deadline = Clock::now() + limits_.request_timeout;
      watch(EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP);
    }
  };
  auto on_readable = [&](int fd, Connection& c) {
    char chunk[4096];
    while (!c.writing) {
      ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        return close_connection(fd);
      }
      if (got < 0) return;
      // The first byte of a request starts its clock; an idle connection has the idle one.
      if (c.input.empty()) c.deadline = Clock::now() + limits_.request_timeout;
      c.input.append(chunk, static_cast<std::size_t>(got));
      serve_buffered(fd, c);
    }
  };
  auto on_writable = [&](int fd, Connection& c) {
    while (c.written < c.output.size()) {
      ssize_t sent =
          ::send(fd, c.output.data() + c.written, c.output.size() - c.written, MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        return close_connection(fd);
      }
      c.written += static_cast<std::size_t>(sent);
    }
    if (c.close_after_write) return close_connection(fd);
    c.output.clear();
    c.writing = false;
    c.deadline = Clock::now() + (c.input.empty() ? limits_.idle_timeout : limits_.request_timeout);
    watch(EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLRDHUP);
    serve_buffered(fd, c);  // a pipelined request already in the buffer
  };
  auto expire = [&] {
    auto now = Clock::now();
    for (auto it = connections.begin(); it != connections.end();) {
      const int fd = it->first;
      Connection& c = it->second;
      ++it;
      if (c.deadline > now) continue;
      if (!c.writing && !c.input.empty()) {
        // A slow request: tell the client why (if it still reads), then hang up.
        fail(fd, c, 408);
        c.deadline = now + std::chrono::milliseconds(100);
      } else {
        close_connection(fd);
      }
    }
    if (!accepting && now >= resume_accepting) {
      accepting = true;
      watch(EPOLL_CTL_MOD, listen_fd_, EPOLLIN);
    }
  };

  epoll_event events[64];
  bool stopping = false;
  while (!stopping) {
    int timeout_ms = -1;
    auto now = Clock::now();
    auto next = Clock::time_point::max();
    for (const auto& [fd, c] : connections) next = std::min(next, c.deadline);
    if (!accepting) next = std::min(next, resume_accepting);
    if (next != Clock::time_point::max()) {
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
      timeout_ms = static_cast<int>(std::clamp<long long>(wait, 0, 60000));
    }
    int ready = ::epoll_wait(epoll, events, 64, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < std::max(ready, 0); ++i) {
      int fd = events[i].data.fd;
      if (fd == stop_fd) {
        stopping = true;
      } else if (fd == listen_fd_) {
        accept_all();
      } else if (auto it = connections.find(fd); it != connections.end()) {
        Connection& c = it->second;
        if (c.writing && (events[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
          on_writable(fd, c);
        } else if (!c.writing) {
          on_readable(fd, c);
        }
      }
    }
    expire();
  }
  while (!connections.empty()) close_connection(connections.begin()->first);
  ::close(epoll);
}

}  // namespace gpumem::serve
