// HTTP basic authentication against bcrypt hashes, as Prometheus' exporter toolkit does it.
//
// A bcrypt check costs tens of milliseconds by design, so it never runs on the serving thread:
// credentials already verified are remembered (by their SHA-256, up to a bound), and others are
// checked on one worker thread behind a short queue. A flood of wrong passwords fills the queue
// and is turned away instead of delaying scrapes.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

namespace gpumem::serve {

class BasicAuth {
 public:
  using Done = std::function<void(bool allowed)>;

  explicit BasicAuth(std::map<std::string, std::string> users, std::size_t max_queued = 8);
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // From the Authorization header alone: false when it is missing or not basic credentials of a
  // known shape, true when these credentials were verified before, nullopt when only a bcrypt
  // check can tell.
  std::optional<bool> quick_check(std::string_view authorization);
  // Runs the bcrypt check on the worker; `done` is called there. false when the queue is full.
  bool check(std::string_view authorization, Done done);

  // Whether `password` matches the bcrypt `hash` (crypt(3), constant-time comparison); never
  // when it holds a NUL, which crypt(3) would take for its end.
  static bool bcrypt_matches(const std::string& password, const std::string& hash);

 private:
  struct Job {
    std::string authorization;
    Done done;
  };
  bool verify(const std::string& authorization);
  void work();

  const std::map<std::string, std::string> users_;
  const std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  std::set<std::string> verified_;  // SHA-256 of verified Authorization headers
  bool stopping_ = false;
  std::thread worker_;
};

// "Basic <base64 of user:password>" split into user and password; nullopt for anything else.
std::optional<std::pair<std::string, std::string>> parse_basic_credentials(
    std::string_view authorization);

}  // namespace gpumem::serve
