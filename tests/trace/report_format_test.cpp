// The report line, byte for byte as the seed's f"{x:6,.0f}" prints it.
#include <gtest/gtest.h>

#include <sstream>

#include "gpumem/trace.hpp"
#include "trace/report_prefix.hpp"

namespace gpumem {
namespace {

using testing::kPrefix;

TEST(ReportFormat, FieldsAreWidthSixWithThousands) {
  EXPECT_EQ(format_report(0, 0, std::nullopt, std::nullopt), kPrefix + "      0      0");
  EXPECT_EQ(format_report(10, 5, std::nullopt, std::nullopt), kPrefix + "     10      5");
  EXPECT_EQ(format_report(-10, -10, std::nullopt, std::nullopt), kPrefix + "    -10    -10");
  EXPECT_EQ(format_report(1234, 1234, std::nullopt, std::nullopt), kPrefix + "  1,234  1,234");
  EXPECT_EQ(format_report(999, 12345, std::nullopt, std::nullopt), kPrefix + "    999 12,345");
  EXPECT_EQ(format_report(-1234, 0, std::nullopt, std::nullopt), kPrefix + " -1,234      0");
  // Wider than six: the field grows, as Python's does.
  EXPECT_EQ(format_report(1234567, 143771, std::nullopt, std::nullopt),
            kPrefix + " 1,234,567 143,771");
  EXPECT_EQ(format_report(-123456, 0, std::nullopt, std::nullopt), kPrefix + " -123,456      0");
}

TEST(ReportFormat, ContextSuffix) {
  const std::string zero = kPrefix + "      0      0";
  EXPECT_EQ(format_report(0, 0, "a", std::nullopt), zero + " (a)");
  EXPECT_EQ(format_report(0, 0, std::nullopt, "exit"), zero + " (exit)");
  EXPECT_EQ(format_report(0, 0, "a", "exit"), zero + " (a: exit)");
  EXPECT_EQ(format_report(0, 0, "a", ""), zero + " (a: )");
  EXPECT_EQ(format_report(0, 0, std::nullopt, std::nullopt), zero);
  EXPECT_EQ(format_report(0, 0, "foobar", "1st try"), zero + " (foobar: 1st try)");
}

TEST(ReportFormat, TheSeedsArithmeticNeverNegative) {
  EXPECT_EQ(trace_deltas(100, 110, 125), (std::pair<std::int64_t, std::int64_t>{10, 15}));
  EXPECT_EQ(trace_deltas(100, 100, 105), (std::pair<std::int64_t, std::int64_t>{0, 5}));
  // The seed's negative peak (sampled 105, start 100, end 110) is clamped to 0.
  EXPECT_EQ(trace_deltas(100, 110, 105), (std::pair<std::int64_t, std::int64_t>{10, 0}));
  EXPECT_EQ(trace_deltas(100, 90, 95), (std::pair<std::int64_t, std::int64_t>{-10, 0}));
  EXPECT_EQ(trace_deltas(100, 90, 150), (std::pair<std::int64_t, std::int64_t>{-10, 50}));
  EXPECT_EQ(trace_deltas(100, 90, 80), (std::pair<std::int64_t, std::int64_t>{-10, 0}));
}

TEST(ReportFormat, OstreamSinkWritesLines) {
  std::ostringstream out;
  const ReportSink sink = ostream_sink(out);
  sink("one");
  sink("two");
  EXPECT_EQ(out.str(), "one\ntwo\n");
}

TEST(ReportFormat, StdoutSinkFlushesALine) {
  ::testing::internal::CaptureStdout();
  stdout_sink()(kPrefix + "      0      0 (x)");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), kPrefix + "      0      0 (x)\n");
}

}  // namespace
}  // namespace gpumem
