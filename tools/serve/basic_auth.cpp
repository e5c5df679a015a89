#include "basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstring>
#include <memory>

namespace gpumem::serve {
namespace {

constexpr std::size_t kMaxVerified = 256;
constexpr std::size_t kMaxAuthorizationBytes = 1024;

std::string sha256(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> parse_basic_credentials(
    std::string_view authorization) {
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() > kMaxAuthorizationBytes || authorization.size() <= kScheme.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < kScheme.size(); ++i) {  // the scheme is case-insensitive
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i]))) {
      return std::nullopt;
    }
  }
  std::string_view encoded = authorization.substr(kScheme.size());
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  if (encoded.empty() || encoded.size() % 4 != 0) return std::nullopt;
  std::string decoded(encoded.size() / 4 * 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                     reinterpret_cast<const unsigned char*>(encoded.data()),
                                     static_cast<int>(encoded.size()));
  if (length < 0) return std::nullopt;
  // EVP_DecodeBlock keeps the bytes the padding stands for: drop them.
  std::size_t padding = 0;
  for (std::size_t i = encoded.size(); i > 0 && encoded[i - 1] == '='; --i) ++padding;
  if (padding > 2) return std::nullopt;
  decoded.resize(static_cast<std::size_t>(length) - padding);
  const std::size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

bool BasicAuth::bcrypt_matches(const std::string& password, const std::string& hash) {
  // crypt(3) reads a C string: a NUL would end the password there, and whatever follows it
  // would be accepted. No password set with htpasswd contains one.
  if (password.find('\0') != std::string::npos) return false;
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof *data);
  const char* result = ::crypt_r(password.c_str(), hash.c_str(), data.get());
  if (result == nullptr || result[0] == '*') return false;
  const std::size_t length = std::strlen(result);
  return length == hash.size() && CRYPTO_memcmp(result, hash.data(), length) == 0;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, std::size_t max_queued)
    : users_(std::move(users)), max_queued_(max_queued), worker_([this] { work(); }) {}

BasicAuth::~BasicAuth() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

std::optional<bool> BasicAuth::quick_check(std::string_view authorization) {
  if (!parse_basic_credentials(authorization)) return false;
  std::lock_guard lock(mutex_);
  if (verified_.count(sha256(authorization))) return true;
  return std::nullopt;
}

bool BasicAuth::check(std::string_view authorization, Done done) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= max_queued_) return false;
    queue_.push_back(Job{std::string(authorization), std::move(done)});
  }
  wake_.notify_one();
  return true;
}

bool BasicAuth::verify(const std::string& authorization) {
  auto credentials = parse_basic_credentials(authorization);
  if (!credentials) return false;
  auto user = users_.find(credentials->first);
  const bool known = user != users_.end();
  // An unknown user is checked against a known user's hash, so that both cost the same.
  if (users_.empty()) return false;
  const bool matches =
      bcrypt_matches(credentials->second, known ? user->second : users_.begin()->second);
  if (!known || !matches) return false;
  std::lock_guard lock(mutex_);
  if (verified_.size() >= kMaxVerified) verified_.clear();
  verified_.insert(sha256(authorization));
  return true;
}

void BasicAuth::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const bool allowed = verify(job.authorization);
    job.done(allowed);
    lock.lock();
  }
}

}  // namespace gpumem::serve
