// Raw TCP clients for the exporter's tests: they send exactly the bytes a test wants, which is
// the point when the bytes are malformed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpumem::testing {

class RawClient {
 public:
  // From `source` (another loopback address, e.g. 127.0.0.2, is another client).
  explicit RawClient(int port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        throw std::runtime_error(std::string("cannot bind to ") + source);
      }
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot connect to port " + std::to_string(port));
    }
  }
  ~RawClient() { ::close(fd_); }
  // A small receive buffer, so that a large response stays unsent while nobody reads it.
  void shrink_receive_buffer() {
    int size = 4096;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return;  // the server may have hung up already; the reply tells why
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
  }

  // Everything until the server closes, or until `limit` passes (a guard against a hung test,
  // not a timing assertion).
  std::string read_to_close(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::string text;
    auto give_up = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < give_up) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char chunk[65536];
      ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return text;
      text.append(chunk, static_cast<std::size_t>(got));
    }
    return text + "<still open>";
  }

  // One response with a Content-Length body on a connection that stays open; bytes of the
  // next response stay buffered.
  std::string read_response(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto give_up = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < give_up) {
      std::size_t head = pending_.find("\r\n\r\n");
      if (head != std::string::npos) {
        std::size_t at = pending_.find("Content-Length: ");
        std::size_t end = head + 4 + std::stoul(pending_.substr(at + 16));
        if (pending_.size() >= end) {
          std::string response = pending_.substr(0, end);
          pending_.erase(0, end);
          return response;
        }
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char chunk[65536];
      ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return pending_ + "<closed>";
      pending_.append(chunk, static_cast<std::size_t>(got));
    }
    return pending_ + "<timeout>";
  }

 private:
  int fd_ = -1;
  std::string pending_;
};

inline std::string status_line(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

inline std::string body_of(const std::string& response) {
  std::size_t head = response.find("\r\n\r\n");
  return head == std::string::npos ? "" : response.substr(head + 4);
}

}  // namespace gpumem::testing
