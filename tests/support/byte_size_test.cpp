// The one parser of byte sizes (--max-peak, the pytest plugin's markers).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "gpumem/internal/byte_size.hpp"

namespace gpumem {
namespace {

using detail::parse_byte_size;

std::uint64_t size_of(const char* text) {
  std::string error;
  const std::optional<std::uint64_t> bytes = parse_byte_size(text, &error);
  EXPECT_TRUE(bytes.has_value()) << text << ": " << error;
  return bytes.value_or(0);
}

std::string refusal(const char* text) {
  std::string error;
  EXPECT_FALSE(parse_byte_size(text, &error).has_value()) << text;
  return error;
}

TEST(ByteSize, BinaryAndDecimalUnitsWithOrWithoutASpace) {
  EXPECT_EQ(size_of("2 GiB"), 2ull << 30);
  EXPECT_EQ(size_of("2GiB"), 2ull << 30);
  EXPECT_EQ(size_of("2 GB"), 2'000'000'000ull);
  EXPECT_EQ(size_of("512 MiB"), 512ull << 20);
  EXPECT_EQ(size_of("16MB"), 16'000'000ull);
  EXPECT_EQ(size_of("1.5 GiB"), 3ull << 29);
  EXPECT_EQ(size_of("1.5GB"), 1'500'000'000ull);
  EXPECT_EQ(size_of("64 KiB"), 65536ull);
  EXPECT_EQ(size_of("64 kB"), 64000ull);
  EXPECT_EQ(size_of("3 TiB"), 3ull << 40);
  EXPECT_EQ(size_of("100 B"), 100ull);
  EXPECT_EQ(size_of("  24 gib  "), 24ull << 30);  // case aside from the i, and blanks
  EXPECT_EQ(size_of("0.5 B"), 0ull);              // rounded down to whole bytes
  EXPECT_EQ(size_of("0 GiB"), 0ull);
}

TEST(ByteSize, AnythingElseIsRefusedWithTheReason) {
  EXPECT_NE(refusal("2").find("no unit"), std::string::npos);
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  EXPECT_NE(refusal("GiB").find("not a number"), std::string::npos);
  EXPECT_NE(refusal("-2 GiB").find("not a number"), std::string::npos);
  EXPECT_NE(refusal("2 GiBs").find("unknown unit"), std::string::npos);
  EXPECT_NE(refusal("2 G").find("unknown unit"), std::string::npos);
  EXPECT_NE(refusal("1e3 MB").find("unknown unit"), std::string::npos);
  EXPECT_NE(refusal("2 GiB extra").find("unknown unit"), std::string::npos);
  EXPECT_NE(refusal("1.2.3 GB").find("unknown unit"), std::string::npos);
  EXPECT_NE(refusal("9000000 TiB").find("too large"), std::string::npos);
  EXPECT_FALSE(parse_byte_size("2", nullptr).has_value());  // no error text asked for
}

TEST(ByteSize, ACountIsShownInTheLargestBinaryUnitThatKeepsItUnder1024) {
  using detail::byte_size_text;
  EXPECT_EQ(byte_size_text(0), "0 B");
  EXPECT_EQ(byte_size_text(1023), "1023 B");
  EXPECT_EQ(byte_size_text(-1023), "-1023 B");
  EXPECT_EQ(byte_size_text(1024), "1.0 KiB");
  EXPECT_EQ(byte_size_text(1536), "1.5 KiB");
  EXPECT_EQ(byte_size_text((1 << 20) - 1), "1024.0 KiB");  // one decimal, rounded
  EXPECT_EQ(byte_size_text(188ll << 20), "188.0 MiB");
  EXPECT_EQ(byte_size_text(143771ll << 20), "140.4 GiB");
  EXPECT_EQ(byte_size_text(-(2ll << 30)), "-2.0 GiB");
  EXPECT_EQ(byte_size_text(5ll << 50), "5120.0 TiB");  // TiB is the largest unit
  EXPECT_EQ(byte_size_text(std::numeric_limits<std::int64_t>::min()), "-8388608.0 TiB");
}

}  // namespace
}  // namespace gpumem
