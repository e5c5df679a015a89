#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpumem/diagnostics.hpp"
#include "gpumem/publish.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

namespace fs = std::filesystem;
using testing::MiB;

class Publish : public ::testing::Test {
 protected:
  void SetUp() override {
    spool_ = fs::temp_directory_path() / ("gpumem-spool-test-" + std::to_string(::getpid()));
    fs::remove_all(spool_);
  }
  void TearDown() override { fs::remove_all(spool_); }
  void write_file(const std::string& name, const std::string& text) {
    fs::create_directories(spool_);
    std::ofstream(spool_ / name) << text;
  }
  static TraceBytes sample_bytes() {
    return {Source::sampled,         0,
            100 * (std::int64_t)MiB, 150 * (std::int64_t)MiB,
            900 * (std::int64_t)MiB, 50 * (std::int64_t)MiB,
            750 * (std::int64_t)MiB};
  }
  fs::path spool_;
  testing::SimGpu gpu_;
};

TEST_F(Publish, RoundTripsEveryField) {
  std::string error;
  ASSERT_TRUE(publish_trace(spool_, "epoch 1", sample_bytes(), &error)) << error;
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 1u);
  const PublishedTrace& t = contents.traces[0];
  EXPECT_EQ(t.scope, "epoch 1");
  EXPECT_EQ(t.pid, static_cast<unsigned>(::getpid()));
  EXPECT_EQ(t.bytes.source, Source::sampled);
  EXPECT_EQ(t.bytes.start, 100 * (std::int64_t)MiB);
  EXPECT_EQ(t.bytes.end, 150 * (std::int64_t)MiB);
  EXPECT_EQ(t.bytes.peak, 900 * (std::int64_t)MiB);
  EXPECT_EQ(t.bytes.delta_used, 50 * (std::int64_t)MiB);
  EXPECT_EQ(t.bytes.delta_peaked, 750 * (std::int64_t)MiB);
  // CUDA ordinal 0 of the two-GPU simulator is the H200 (cuda_order [1, 0]).
  EXPECT_EQ(t.uuid, "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_GT(t.unix_ms, 1'600'000'000'000);
  EXPECT_EQ(contents.malformed, 0u);
}

TEST_F(Publish, CreatesAPrivateDirectory) {
  ASSERT_TRUE(publish_trace(spool_, "a", sample_bytes()));
  struct stat info {};
  ASSERT_EQ(::stat(spool_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
}

TEST_F(Publish, ReplacesTheLatestResultOfAScope) {
  TraceBytes bytes = sample_bytes();
  ASSERT_TRUE(publish_trace(spool_, "step", bytes));
  bytes.peak = 1234;
  ASSERT_TRUE(publish_trace(spool_, "step", bytes));
  ASSERT_TRUE(publish_trace(spool_, "other", bytes));
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 2u);
  EXPECT_EQ(contents.traces[0].scope, "other");
  EXPECT_EQ(contents.traces[1].scope, "step");
  EXPECT_EQ(contents.traces[1].bytes.peak, 1234);
  // Nothing but the two records is left in the directory: no temporary files.
  EXPECT_EQ(std::distance(fs::directory_iterator(spool_), fs::directory_iterator{}), 2);
}

TEST_F(Publish, IgnoresAPartiallyWrittenTemporaryFile) {
  ASSERT_TRUE(publish_trace(spool_, "kept", sample_bytes()));
  // What a publisher killed mid-write leaves: a torn hidden temporary file.
  std::string whole = format_spool_record(read_spool(spool_).traces.at(0));
  write_file(".99999-0.tmp", whole.substr(0, whole.size() / 2));
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 1u);
  EXPECT_EQ(contents.traces[0].scope, "kept");
  EXPECT_EQ(contents.malformed, 0u);
}

TEST_F(Publish, CountsTornAndForeignRecordsAsMalformed) {
  ASSERT_TRUE(publish_trace(spool_, "kept", sample_bytes()));
  std::string whole = format_spool_record(read_spool(spool_).traces.at(0));
  write_file("1-torn.trace", whole.substr(0, whole.size() - 4));  // no end line
  write_file("2-extra.trace", whole + "scope again\n");           // after the end
  write_file("3-empty.trace", "");
  write_file("4-binary.trace", std::string("gpumem-trace 1\nscope a\x01\nend\n"));
  write_file("5-big.trace", std::string(5000, 'x'));
  std::string negative_pid = whole;
  negative_pid.replace(negative_pid.find("pid "), 4, "pid -");
  write_file("6-pid.trace", negative_pid);
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 1u);
  EXPECT_EQ(contents.traces[0].scope, "kept");
  EXPECT_EQ(contents.malformed, 6u);
}

TEST_F(Publish, DoesNotFollowSymlinks) {
  write_file("real.txt", format_spool_record(PublishedTrace{"s", 1, "", 1, sample_bytes(), {}}));
  fs::create_symlink(spool_ / "real.txt", spool_ / "1-link.trace");
  SpoolContents contents = read_spool(spool_);
  EXPECT_TRUE(contents.traces.empty());
  EXPECT_EQ(contents.malformed, 1u);
}

TEST_F(Publish, BoundsTheFilesReadPerCall) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(publish_trace(spool_, "scope " + std::to_string(i), sample_bytes()));
  }
  SpoolContents contents = read_spool(spool_, SpoolLimits{3, 4096});
  EXPECT_EQ(contents.traces.size(), 3u);
  EXPECT_EQ(contents.dropped, 2u);
}

TEST_F(Publish, RejectsBadScopesWithAReason) {
  std::string error;
  EXPECT_FALSE(publish_trace(spool_, "", sample_bytes(), &error));
  EXPECT_NE(error.find("scope"), std::string::npos);
  EXPECT_FALSE(publish_trace(spool_, "two\nlines", sample_bytes(), &error));
  EXPECT_FALSE(publish_trace(spool_, std::string(max_scope_bytes + 1, 'a'), sample_bytes()));
  EXPECT_EQ(last_diagnostic(), error);
  EXPECT_TRUE(read_spool(spool_).traces.empty());
}

TEST_F(Publish, RefusesAWorldWritableDirectory) {
  fs::create_directories(spool_);
  fs::permissions(spool_, fs::perms::all);
  std::string error;
  EXPECT_FALSE(publish_trace(spool_, "a", sample_bytes(), &error));
  EXPECT_NE(error.find("refusing"), std::string::npos) << error;
}

TEST_F(Publish, RefusesASymlinkedDirectory) {
  fs::create_directories(spool_.string() + "-real");
  fs::create_symlink(spool_.string() + "-real", spool_);
  EXPECT_FALSE(publish_trace(spool_, "a", sample_bytes()));
  fs::remove(spool_);
  fs::remove_all(spool_.string() + "-real");
}

TEST_F(Publish, ReportsAnUnwritableLocation) {
  std::string error;
  EXPECT_FALSE(publish_trace("/proc/gpumem-spool", "a", sample_bytes(), &error));
  EXPECT_NE(error.find("/proc/gpumem-spool"), std::string::npos) << error;
}

TEST_F(Publish, DefaultDirectoryFollowsTheEnvironment) {
  ::setenv("GPUMEM_SPOOL_DIR", "/somewhere/spool", 1);
  EXPECT_EQ(default_spool_directory(), fs::path("/somewhere/spool"));
  ::unsetenv("GPUMEM_SPOOL_DIR");
  ::setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
  EXPECT_EQ(default_spool_directory(), fs::path("/run/user/1000/gpumem"));
  ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(default_spool_directory(), fs::path("/tmp/gpumem-" + std::to_string(::getuid())));
}

TEST_F(Publish, AMissingSpoolIsEmpty) {
  SpoolContents contents = read_spool(spool_ / "nowhere");
  EXPECT_TRUE(contents.traces.empty());
  EXPECT_EQ(contents.malformed, 0u);
}

}  // namespace
}  // namespace gpumem
