// Publishing trace results to the spool and reading them back: atomic replacement, the
// directory kinds accepted and refused, fair bounded reads, and the expiry of dead publishers.
#include <grp.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "gpumem/diagnostics.hpp"
#include "gpumem/internal/procfs.hpp"
#include "gpumem/internal/spool.hpp"
#include "gpumem/publish.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

namespace fs = std::filesystem;
using detail::format_spool_record;
using detail::process_running;
using detail::PublishedTrace;
using detail::read_spool;
using detail::SpoolContents;
using detail::SpoolExpiry;
using detail::SpoolLimits;
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

TEST_F(Publish, SharesTheFileLimitFairlyAmongPublishers) {
  // One program with 300 scopes, two with one each, read with room for 100.
  PublishedTrace trace{"s", 0, "", 1, sample_bytes(), {}};
  for (unsigned pid : {1000u, 2000u, 3000u}) {
    const int scopes = pid == 1000 ? 300 : 1;
    for (int i = 0; i < scopes; ++i) {
      trace.pid = pid;
      trace.scope = "scope " + std::to_string(i);
      write_file(std::to_string(pid) + "-" + std::to_string(i) + ".trace",
                 format_spool_record(trace));
    }
  }
  SpoolContents contents = read_spool(spool_, SpoolLimits{100, 4096});
  ASSERT_EQ(contents.traces.size(), 100u);
  EXPECT_EQ(contents.dropped, 202u);
  std::map<unsigned, int> per_pid;
  for (const auto& t : contents.traces) ++per_pid[t.pid];
  EXPECT_EQ(per_pid[2000], 1);
  EXPECT_EQ(per_pid[3000], 1);
  EXPECT_EQ(per_pid[1000], 98);
}

TEST_F(Publish, CapsTheScopesOfOneProcess) {
  for (std::size_t i = 0; i < max_scopes_per_process; ++i) {
    ASSERT_TRUE(publish_trace(spool_, "scope " + std::to_string(i), sample_bytes()));
  }
  std::string error;
  EXPECT_FALSE(publish_trace(spool_, "one too many", sample_bytes(), &error));
  EXPECT_NE(error.find("limit"), std::string::npos) << error;
  EXPECT_TRUE(publish_trace(spool_, "scope 0", sample_bytes()));  // replacing is fine
  EXPECT_EQ(read_spool(spool_).traces.size(), max_scopes_per_process);
}

TEST_F(Publish, RecordsThePublishersStartTime) {
  ASSERT_TRUE(publish_trace(spool_, "a", sample_bytes()));
  const PublishedTrace t = read_spool(spool_).traces.at(0);
  EXPECT_EQ(t.pid_start, procfs::start_time("/proc", std::to_string(::getpid())));
  EXPECT_GT(t.pid_start, 0u);
  EXPECT_TRUE(process_running("/proc", t.pid, t.pid_start));
  EXPECT_FALSE(process_running("/proc", t.pid, t.pid_start + 1));  // a reused pid
  EXPECT_FALSE(process_running("/proc", 1, 12345));
  EXPECT_FALSE(process_running("/proc", t.pid, 0));
}

TEST_F(Publish, ExpiresDeadPublishersByPidAndStartTime) {
  ASSERT_TRUE(publish_trace(spool_, "alive", sample_bytes()));
  // Pid 1 runs forever, but did not publish this: its start time does not match.
  PublishedTrace impostor{"pid one", 1, "", 1'000, sample_bytes(), {}, 12345};
  write_file("1-impostor.trace", format_spool_record(impostor));
  PublishedTrace old_writer{"no start time", 1, "", 1'000, sample_bytes(), {}};
  write_file("1-old.trace", format_spool_record(old_writer));
  write_file(".999999999-0.tmp", "torn");  // its writer is gone
  // Temporaries named as this writer names them: "<pid>-<namespace>-<start>-<sequence>".
  const PublishedTrace alive = read_spool(spool_).traces.at(0);
  const std::string self = alive.file.substr(0, alive.file.rfind('-'));
  write_file("." + self + "-7.tmp", "being written");
  const std::string dead = std::to_string(alive.pid) + "-" +
                           self.substr(self.find('-') + 1, self.rfind('-') - self.find('-')) +
                           std::to_string(alive.pid_start + 1);  // a reused pid
  write_file("." + dead + "-7.tmp", "torn");
  SpoolExpiry expiry;
  expiry.now_unix_ms = 1'000'000'000'000'000;
  expiry.retention_ms = 1'000;
  SpoolContents contents = read_spool(spool_, {}, &expiry);
  ASSERT_EQ(contents.traces.size(), 1u);
  EXPECT_EQ(contents.traces[0].scope, "alive");  // its publisher (this test) still runs
  EXPECT_EQ(contents.expired, 4u);
  EXPECT_TRUE(fs::exists(spool_ / ("." + self + "-7.tmp")));
  EXPECT_FALSE(fs::exists(spool_ / ("." + dead + "-7.tmp")));
  EXPECT_FALSE(fs::exists(spool_ / "1-impostor.trace"));
  EXPECT_FALSE(fs::exists(spool_ / "1-old.trace"));
  EXPECT_FALSE(fs::exists(spool_ / ".999999999-0.tmp"));
}

// Runs `body` in a child process as `uid` with `group` as its only supplementary group; the
// child's exit status (0: all went well).
template <class Body>
int as_user(uid_t uid, gid_t group, Body body) {
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(1, &group) != 0 || ::setgid(group) != 0 || ::setuid(uid) != 0) ::_exit(100);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

TEST_F(Publish, AGroupSharedSpoolServesTwoUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as two users";
  constexpr gid_t kGroup = 4242;
  constexpr uid_t kAlice = 4243, kBob = 4244, kExporter = 4245, kStranger = 4246;
  // What docs/serving.md asks of an administrator: install -d -m 3770 -g gpumem DIR.
  fs::create_directories(spool_);
  ASSERT_EQ(::chown(spool_.c_str(), kExporter, kGroup), 0);
  ASSERT_EQ(::chmod(spool_.c_str(), 03770), 0);
  for (auto [user, scope] : {std::pair{kAlice, "alice step"}, std::pair{kBob, "bob step"}}) {
    const std::string name = scope;
    EXPECT_EQ(as_user(user, kGroup,
                      [&] {
                        TraceBytes bytes = sample_bytes();
                        bytes.device = -1;
                        std::string error;
                        return publish_trace(spool_, name, bytes, &error) ? 0 : 1;
                      }),
              0)
        << scope;
  }
  for (const auto& entry : fs::directory_iterator(spool_)) {
    struct stat info {};
    ASSERT_EQ(::stat(entry.path().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u) << entry.path();
    EXPECT_EQ(info.st_gid, kGroup) << entry.path();  // from the setgid directory
  }
  // The exporter's user, in the group, reads both users' records.
  EXPECT_EQ(as_user(kExporter, kGroup,
                    [&] {
                      SpoolContents contents = read_spool(spool_);
                      return contents.traces.size() == 2 && contents.unreadable == 0 ? 0 : 1;
                    }),
            0);
  // Someone outside the group can neither publish nor read there.
  EXPECT_EQ(as_user(kStranger, kStranger + 1,
                    [&] {
                      TraceBytes bytes = sample_bytes();
                      bytes.device = -1;
                      return publish_trace(spool_, "intruder", bytes) ? 1 : 0;
                    }),
            0);
  // A record the exporter may not read is unreadable, not malformed.
  write_file("1-private.trace", "x");
  ASSERT_EQ(::chmod((spool_ / "1-private.trace").c_str(), 0600), 0);
  EXPECT_EQ(as_user(kExporter, kGroup,
                    [&] {
                      SpoolContents contents = read_spool(spool_);
                      return contents.unreadable == 1 && contents.malformed == 0 ? 0 : 1;
                    }),
            0);
}

// Issue 24, finding 3: two containers' pid-1 processes publishing one scope to a shared spool
// each keep their record (the file name carries the pid namespace and start time).
TEST_F(Publish, ContainersSharingASpoolKeepEachOthersRecords) {
  fs::create_directories(spool_);
  // Both containers live at once: the kernel numbers a namespace anew only while the other is
  // alive (the number of one that has ended is given to the next, and once was, under load).
  int published[2], release[2];
  ASSERT_EQ(::pipe(published), 0);
  ASSERT_EQ(::pipe(release), 0);
  std::vector<pid_t> outers;
  for (std::int64_t peak : {111, 222}) {
    const pid_t outer = ::fork();
    if (outer == 0) {
      ::close(published[0]);
      ::close(release[1]);
      // A pid namespace of its own: its first child is pid 1 there, as in a container.
      if (::unshare(CLONE_NEWPID) != 0) ::_exit(77);
      const pid_t inner = ::fork();
      if (inner == 0) {
        TraceBytes bytes = sample_bytes();
        bytes.device = -1;
        bytes.peak = peak;
        const char ok = ::getpid() == 1 && publish_trace(spool_, "train step", bytes) ? 1 : 0;
        [[maybe_unused]] ssize_t written = ::write(published[1], &ok, 1);
        ::close(published[1]);
        char byte = 0;
        [[maybe_unused]] ssize_t read = ::read(release[0], &byte, 1);  // until both published
        ::_exit(ok ? 0 : 1);
      }
      ::close(published[1]);  // the reader sees the end once both have written
      ::close(release[0]);
      int status = 0;
      ::waitpid(inner, &status, 0);
      ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
    }
    outers.push_back(outer);
  }
  ::close(published[1]);
  ::close(release[0]);
  char reports[2] = {};
  std::size_t got = 0;
  while (got < 2) {
    const ssize_t n = ::read(published[0], reports + got, 2 - got);
    if (n <= 0) break;  // a container that could not start (no pid namespaces here)
    got += static_cast<std::size_t>(n);
  }
  ::close(release[1]);
  ::close(published[0]);
  for (const pid_t outer : outers) {
    int status = 0;
    ::waitpid(outer, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no new pid namespaces here (needs root)";
    ASSERT_EQ(WEXITSTATUS(status), 0);
  }
  ASSERT_EQ(got, 2u);
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 2u);
  EXPECT_EQ(contents.malformed, 0u);
  std::set<std::int64_t> peaks;
  std::set<std::string> namespaces;
  for (const PublishedTrace& t : contents.traces) {
    EXPECT_EQ(t.scope, "train step");
    EXPECT_EQ(t.pid, 1u);
    EXPECT_TRUE(t.pid_namespace.starts_with("pid:[")) << t.pid_namespace;
    EXPECT_GT(t.pid_start, 0u);
    peaks.insert(t.bytes.peak);
    namespaces.insert(t.pid_namespace);
  }
  EXPECT_EQ(peaks, (std::set<std::int64_t>{111, 222}));
  EXPECT_EQ(namespaces.size(), 2u);
}

// `count` records of dead publishers, as anyone who may write the spool can make them: named
// "1-….trace" to "<count>-….trace" (the flood), each a well-formed record of its pid.
void forge_records(const fs::path& spool, int count, uid_t owner) {
  for (int pid = 1; pid <= count; ++pid) {
    PublishedTrace forged{"forged " + std::to_string(pid),
                          static_cast<unsigned>(pid),
                          "",
                          1'000,
                          {Source::sampled, 0, 0, 1, 1, 1, 0},
                          {}};
    const fs::path file = spool / (std::to_string(pid) + "-forged.trace");
    std::ofstream(file) << format_spool_record(forged);
    ASSERT_EQ(::chown(file.c_str(), owner, static_cast<gid_t>(-1)), 0);
  }
}

// Issue 24, finding 4: 1,100 forged files in the spool hid every record of a real publisher
// (spool_dropped_files 92). Its 16 records are read, and the flood fills what is left.
TEST_F(Publish, AFloodOfForgedFilesCannotHideARunningPublisher) {
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(publish_trace(spool_, "real " + std::to_string(i), sample_bytes()));
  }
  forge_records(spool_, 1100, ::geteuid());  // the same user, even: the running one goes first
  SpoolContents contents = read_spool(spool_);
  EXPECT_EQ(contents.traces.size(), 1024u);
  EXPECT_EQ(contents.dropped, 92u);
  EXPECT_EQ(contents.malformed, 0u);
  // Counted by scope, not pid: the flood's pids run from 1 to 1,100, and in a container this test's
  // own pid is often among them (a forged record of it is a dead publisher: its start time
  // differs).
  int real = 0;
  for (const PublishedTrace& t : contents.traces) {
    real += t.scope.starts_with("real ") ? 1 : 0;
  }
  EXPECT_EQ(real, 16);
}

// The same flood by another user, against a publisher that has exited (its records retained):
// the share goes by the files' owners, as the kernel gives them, whatever the names say.
TEST_F(Publish, AnotherUsersFloodCannotHideAnExitedPublisher) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as two users";
  constexpr gid_t kGroup = 4242;
  constexpr uid_t kAlice = 4243, kMallory = 4246;
  fs::create_directories(spool_);
  ASSERT_EQ(::chown(spool_.c_str(), 0, kGroup), 0);
  ASSERT_EQ(::chmod(spool_.c_str(), 03770), 0);
  EXPECT_EQ(as_user(kAlice, kGroup,
                    [&] {
                      TraceBytes bytes = sample_bytes();
                      bytes.device = -1;
                      for (int i = 0; i < 16; ++i) {
                        if (!publish_trace(spool_, "alice " + std::to_string(i), bytes)) return 1;
                      }
                      return 0;
                    }),
            0);
  forge_records(spool_, 1100, kMallory);
  SpoolContents contents = read_spool(spool_);
  EXPECT_EQ(contents.traces.size(), 1024u);
  EXPECT_EQ(contents.dropped, 92u);
  int alice = 0;
  for (const PublishedTrace& t : contents.traces) alice += t.scope.starts_with("alice") ? 1 : 0;
  EXPECT_EQ(alice, 16);
}

// A record whose name says another writer than its contents is not a record.
TEST_F(Publish, ARecordMustAgreeWithItsName) {
  ASSERT_TRUE(publish_trace(spool_, "mine", sample_bytes()));
  const PublishedTrace mine = read_spool(spool_).traces.at(0);
  PublishedTrace other = mine;
  other.scope = "claims to be mine";
  other.pid = mine.pid + 1;
  write_file(mine.file.substr(0, mine.file.size() - 6) + "0.trace", format_spool_record(other));
  write_file(std::to_string(mine.pid) + "-legacy.trace", format_spool_record(other));
  SpoolContents contents = read_spool(spool_);
  ASSERT_EQ(contents.traces.size(), 1u);
  EXPECT_EQ(contents.traces[0].scope, "mine");
  EXPECT_EQ(contents.malformed, 2u);
}

// Issue 24, finding 5: the exporter read any directory; it now applies the publishers' rule
// (one function), and both say why they refuse.
TEST_F(Publish, ReaderAndPublishersRefuseTheSameDirectories) {
  struct Case {
    mode_t mode;
    uid_t owner;
    const char* reason;  // empty: trusted
  };
  const uid_t me = ::geteuid();
  std::vector<Case> cases = {{0700, me, ""},
                             {03770, me, ""},
                             {0777, me, "others may write it (mode 0777)"},
                             {01777, me, "others may write it (mode 1777)"},
                             {0770, me, "not setgid and sticky (mode 0770"},
                             {02770, me, "not setgid and sticky (mode 2770"}};
  if (::geteuid() == 0) {
    cases.push_back({0700, 4246, "owned by uid 4246, neither this user (uid 0) nor root"});
    cases.push_back({0755, 4246, "owned by uid 4246"});
  }
  for (const Case& c : cases) {
    fs::remove_all(spool_);
    fs::create_directories(spool_);
    PublishedTrace forged{"forged", 1, "", 1'000, sample_bytes(), {}};
    write_file("1-forged.trace", format_spool_record(forged));
    ASSERT_EQ(::chown(spool_.c_str(), c.owner, static_cast<gid_t>(-1)), 0);
    ASSERT_EQ(::chmod(spool_.c_str(), c.mode), 0);
    const std::string refusal = detail::spool_directory_refusal(spool_);
    SpoolContents contents = read_spool(spool_);
    std::string error;
    const bool published = publish_trace(spool_, "mine", sample_bytes(), &error);
    if (*c.reason == '\0') {
      EXPECT_EQ(refusal, "") << std::oct << c.mode;
      EXPECT_TRUE(published) << error;
      EXPECT_EQ(contents.traces.size(), 1u) << std::oct << c.mode;
    } else {
      EXPECT_NE(refusal.find(c.reason), std::string::npos) << refusal;
      EXPECT_EQ(contents.refused, refusal);
      EXPECT_TRUE(contents.traces.empty()) << std::oct << c.mode;
      EXPECT_FALSE(published) << std::oct << c.mode;
      EXPECT_NE(error.find("refusing the spool directory " + spool_.string() + ": " + refusal),
                std::string::npos)
          << error;
    }
  }
  fs::remove_all(spool_);
  fs::create_directories(spool_.string() + "-real");
  fs::create_symlink(spool_.string() + "-real", spool_);
  EXPECT_EQ(detail::spool_directory_refusal(spool_), "it is a symbolic link");
  EXPECT_EQ(read_spool(spool_).refused, "it is a symbolic link");
  fs::remove(spool_);
  fs::remove_all(spool_.string() + "-real");
  EXPECT_EQ(detail::spool_directory_refusal(spool_ / "missing"), "");  // an empty spool
}

TEST_F(Publish, AMissingSpoolIsEmpty) {
  SpoolContents contents = read_spool(spool_ / "nowhere");
  EXPECT_TRUE(contents.traces.empty());
  EXPECT_EQ(contents.malformed, 0u);
}

}  // namespace
}  // namespace gpumem
