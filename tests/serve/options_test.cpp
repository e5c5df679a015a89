#include <gtest/gtest.h>

#include "duration.hpp"
#include "listen_address.hpp"

namespace gpumem::serve {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ParsesTheUnitsOfTheCommandLine) {
  EXPECT_EQ(parse_duration("10ms"), 10ms);
  EXPECT_EQ(parse_duration("1s"), 1s);
  EXPECT_EQ(parse_duration("30s"), 30s);
  EXPECT_EQ(parse_duration("500us"), 500us);
  EXPECT_EQ(parse_duration("500\xC2\xB5s"), 500us);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("2m"), 120s);
  EXPECT_EQ(parse_duration("1h"), 3600s);
  EXPECT_EQ(parse_duration("250ns"), 250ns);
}

TEST(Duration, RejectsAnythingElse) {
  for (const char* bad : {"", "10", "ms", "10x", "-1s", "0s", "0.0000001ns", "1.2.3s", "1 s",
                          "10msx", "2d", "99999999999999999999s", "48h"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

TEST(Duration, FormatsTheShortestExactSpelling) {
  EXPECT_EQ(format_duration(10ms), "10ms");
  EXPECT_EQ(format_duration(30s), "30s");
  EXPECT_EQ(format_duration(500us), "500us");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
}

TEST(ListenAddress, ParsesHostAndPort) {
  auto v4 = parse_listen_address("127.0.0.1:9400");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, "9400");
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "0");
  EXPECT_TRUE(parse_listen_address("localhost:9400"));
}

TEST(ListenAddress, RejectsMalformedOnes) {
  for (const char* bad : {"", "9400", ":9400", "127.0.0.1:", "127.0.0.1:70000", "::1:9400",
                          "127.0.0.1:94x0", "host name:1", "a/b:1"}) {
    EXPECT_FALSE(parse_listen_address(bad)) << bad;
  }
}

}  // namespace
}  // namespace gpumem::serve
