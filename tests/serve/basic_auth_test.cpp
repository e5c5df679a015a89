// That a wrong user and a wrong password take the same path through the password check: the
// bcrypt computation runs for both, against a hash of the same kind, so that their answers
// cannot be told apart by time. Asserted on the calls to crypt_r(3), not by timing them.
#include "basic_auth.hpp"

#include <crypt.h>
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex crypt_calls_mutex;
std::vector<std::string> crypt_calls;  // the setting (hash) of each call

}  // namespace

// Takes the place of libxcrypt's crypt_r for this test program (the executable's definition
// comes first in the lookup), records the hash it is asked to check against, and forwards.
extern "C" char* crypt_r(const char* phrase, const char* setting, struct crypt_data* data) {
  using Real = char* (*)(const char*, const char*, struct crypt_data*);
  static const Real real = reinterpret_cast<Real>(::dlsym(RTLD_NEXT, "crypt_r"));
  {
    std::lock_guard lock(crypt_calls_mutex);
    crypt_calls.emplace_back(setting);
  }
  return real(phrase, setting, data);
}

namespace gpumem::serve {
namespace {

std::string bcrypt_at_lowest_cost(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (::crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting) == nullptr) return {};
  crypt_data data{};
  const char* hash = ::crypt_r(password.c_str(), setting, &data);
  return hash == nullptr ? std::string() : hash;
}

// The answer of the worker's check, and the hashes crypt_r was asked about meanwhile.
std::pair<bool, std::vector<std::string>> checked_by_worker(BasicAuth& auth,
                                                            const std::string& header) {
  {
    std::lock_guard lock(crypt_calls_mutex);
    crypt_calls.clear();
  }
  std::promise<bool> answer;
  if (!auth.check(header, [&](bool allowed) { answer.set_value(allowed); })) return {true, {}};
  const bool allowed = answer.get_future().get();
  std::lock_guard lock(crypt_calls_mutex);
  return {allowed, crypt_calls};
}

TEST(BasicAuthPath, AnUnknownUserCostsABcryptCheckAsAWrongPasswordDoes) {
  const std::string alice = bcrypt_at_lowest_cost("alice's secret");
  const std::string prometheus = bcrypt_at_lowest_cost("s3cr3t");
  BasicAuth auth({{"alice", alice}, {"prometheus", prometheus}});
  // prometheus:wrong: one bcrypt check, against prometheus' hash.
  auto [wrong_password, wrong_password_calls] =
      checked_by_worker(auth, "Basic cHJvbWV0aGV1czp3cm9uZw==");
  EXPECT_FALSE(wrong_password);
  EXPECT_EQ(wrong_password_calls, std::vector<std::string>{prometheus});
  // nobody:s3cr3t: one bcrypt check too, against a real user's hash (not skipped, not a
  // cheaper made-up one).
  auto [unknown, unknown_calls] = checked_by_worker(auth, "Basic bm9ib2R5OnMzY3IzdA==");
  EXPECT_FALSE(unknown);
  ASSERT_EQ(unknown_calls.size(), 1u);
  EXPECT_TRUE(unknown_calls[0] == alice || unknown_calls[0] == prometheus) << unknown_calls[0];
  // An unknown user who sends the password of the user whose hash stood in is still refused.
  auto [with_stand_in, ignored] =
      checked_by_worker(auth, unknown_calls[0] == alice ? "Basic bm9ib2R5OmFsaWNlJ3Mgc2VjcmV0"
                                                        : "Basic bm9ib2R5OnMzY3IzdA==");
  EXPECT_FALSE(with_stand_in);
  // The right credentials pass, through the same one check.
  auto [right, right_calls] = checked_by_worker(auth, "Basic cHJvbWV0aGV1czpzM2NyM3Q=");
  EXPECT_TRUE(right);
  EXPECT_EQ(right_calls, std::vector<std::string>{prometheus});
}

}  // namespace
}  // namespace gpumem::serve
