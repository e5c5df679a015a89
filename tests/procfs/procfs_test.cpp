// Each fact of gpumem/internal/procfs.hpp from a temporary tree laid out like /proc (so that every
// malformed or missing file can be tried), and the ones every process has from the real /proc.
#include "gpumem/internal/procfs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpumem {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpumem_procfs_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // /PROC/PID/NAME holding `text`.
  void write(const std::string& pid, const std::string& name, const std::string& text) {
    fs::create_directories(root_ / pid);
    std::ofstream(root_ / pid / name, std::ios::binary) << text;
  }
  // /PROC/PID/ns/pid naming `target`, as the kernel's link does (it need not exist).
  void link_namespace(const std::string& pid, const std::string& target) {
    fs::create_directories(root_ / pid / "ns");
    fs::create_symlink(target, root_ / pid / "ns" / "pid");
  }

  fs::path root_;
};

// A stat line whose command name holds spaces and parentheses: fields count after its last ')'.
const char* const kStat =
    "4242 (my (odd) cmd) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n";

TEST_F(FakeProc, PidNamespaceIsTheInodeItsLinkNames) {
  link_namespace("4242", "pid:[4026532001]");
  EXPECT_EQ(procfs::pid_namespace(root_, "4242"), 4026532001u);
  EXPECT_EQ(procfs::pid_namespace_text(4026532001u), "pid:[4026532001]");
}

TEST_F(FakeProc, PidNamespaceUnknownIsNulloptNeverZero) {
  EXPECT_EQ(procfs::pid_namespace(root_, "1"), std::nullopt);  // no such process
  link_namespace("2", "net:[4026532001]");                     // not a pid namespace
  EXPECT_EQ(procfs::pid_namespace(root_, "2"), std::nullopt);
  link_namespace("3", "pid:[]");
  EXPECT_EQ(procfs::pid_namespace(root_, "3"), std::nullopt);
  link_namespace("4", "pid:[12x]");
  EXPECT_EQ(procfs::pid_namespace(root_, "4"), std::nullopt);
  link_namespace("5", "pid:[0]");  // no namespace file has inode 0
  EXPECT_EQ(procfs::pid_namespace(root_, "5"), std::nullopt);
  write("6", "ns", "");  // a file where the folder should be
  EXPECT_EQ(procfs::pid_namespace(root_, "6"), std::nullopt);
}

TEST_F(FakeProc, NamespacePidsAreTheNSpidLine) {
  write("5000", "status", "Name:\tpython3\nNSpid:\t5000\t12\t1\nNSpgid:\t5000\t12\t1\n");
  EXPECT_EQ(procfs::namespace_pids(root_, "5000"), (std::vector<std::uint32_t>{5000, 12, 1}));
  write("6000", "status", "Name:\tbash\nNSpid:\t6000\n");
  EXPECT_EQ(procfs::namespace_pids(root_, "6000"), (std::vector<std::uint32_t>{6000}));
}

TEST_F(FakeProc, NamespacePidsUnknownIsNulloptNeverEmpty) {
  EXPECT_EQ(procfs::namespace_pids(root_, "1"), std::nullopt);  // gone
  write("2", "status", "Name:\told kernel\nPid:\t2\n");         // before Linux 4.1
  EXPECT_EQ(procfs::namespace_pids(root_, "2"), std::nullopt);
  write("3", "status", "NSpid:\n");
  EXPECT_EQ(procfs::namespace_pids(root_, "3"), std::nullopt);
  write("4", "status", "NSpid:\t4\tx\n");
  EXPECT_EQ(procfs::namespace_pids(root_, "4"), std::nullopt);
}

// A process of a nested namespace is found by the name it gives itself: its namespace and its pid
// there. Another process of that namespace, or one with that pid in another, is not it.
TEST_F(FakeProc, AProcessIsFoundByTheNameItGivesItself) {
  link_namespace("5000", "pid:[4026532001]");
  write("5000", "status", "Name:\tpython3\nNSpid:\t5000\t12\n");
  link_namespace("5001", "pid:[4026532001]");
  write("5001", "status", "Name:\tpython3\nNSpid:\t5001\t13\n");
  link_namespace("6000", "pid:[4026532002]");
  write("6000", "status", "Name:\tpython3\nNSpid:\t6000\t12\n");
  link_namespace("7000", "pid:[4026532001]");  // its NSpid cannot be read: not a match
  const std::optional<procfs::OwnName> name = procfs::own_name(root_, "5001");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->pid_namespace, 4026532001u);
  EXPECT_EQ(name->pid, 13u);
  EXPECT_EQ(procfs::own_name(root_, "7000"), std::nullopt);
  EXPECT_EQ(procfs::own_name(root_, "8000"), std::nullopt);  // no such process
  EXPECT_EQ(procfs::process_named(root_, {4026532001u, 12}), 5000);
  EXPECT_EQ(procfs::process_named(root_, {4026532002u, 12}), 6000);
  EXPECT_EQ(procfs::process_named(root_, {4026532001u, 14}), std::nullopt);
  EXPECT_EQ(procfs::process_named(root_, {4026532003u, 12}), std::nullopt);
}

TEST_F(FakeProc, CommandNameIsCommWithoutItsNewline) {
  write("7", "comm", "python3\n");
  EXPECT_EQ(procfs::command_name(root_, "7"), "python3");
  write("8", "comm", "my (odd) cmd\n");
  EXPECT_EQ(procfs::command_name(root_, "8"), "my (odd) cmd");
  EXPECT_EQ(procfs::command_name(root_, "9"), std::nullopt);
  write("10", "comm", "");
  EXPECT_EQ(procfs::command_name(root_, "10"), std::nullopt);
}

TEST_F(FakeProc, StartTimeAndParentAreStatFields) {
  write("4242", "stat", kStat);
  EXPECT_EQ(procfs::start_time(root_, "4242"), 987654u);
  EXPECT_EQ(procfs::parent_pid(root_, "4242"), 17);
}

TEST_F(FakeProc, StatUnknownIsNullopt) {
  EXPECT_EQ(procfs::start_time(root_, "1"), std::nullopt);
  EXPECT_EQ(procfs::parent_pid(root_, "1"), std::nullopt);
  write("2", "stat", "2 (no closing paren S 1 2 2\n");
  EXPECT_EQ(procfs::start_time(root_, "2"), std::nullopt);
  EXPECT_EQ(procfs::parent_pid(root_, "2"), std::nullopt);
  write("3", "stat", "3 (short) S 1 3 3 0\n");  // cut before field 22
  EXPECT_EQ(procfs::start_time(root_, "3"), std::nullopt);
  EXPECT_EQ(procfs::parent_pid(root_, "3"), 1);
  write("4", "stat", "4 (bad) S x 4 4 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12y 0 0\n");
  EXPECT_EQ(procfs::start_time(root_, "4"), std::nullopt);
  EXPECT_EQ(procfs::parent_pid(root_, "4"), std::nullopt);
}

TEST_F(FakeProc, CgroupsAreTheFilesText) {
  const std::string v1 = "12:memory:/kubepods/pod1/abc\n0::/user.slice\n";
  write("11", "cgroup", v1);
  EXPECT_EQ(procfs::cgroups(root_, "11"), v1);
  write("12", "cgroup", "");
  EXPECT_EQ(procfs::cgroups(root_, "12"), "");  // read, and empty: known
  EXPECT_EQ(procfs::cgroups(root_, "13"), std::nullopt);
}

TEST_F(FakeProc, CommandLineIsTheArgumentsNulSeparated) {
  write("20", "cmdline", "python3\0-c\0\0print(1)\0"s);
  EXPECT_EQ(procfs::command_line(root_, "20"),
            (std::vector<std::string>{"python3", "-c", "", "print(1)"}));
  write("21", "cmdline", "");  // a kernel thread: known to have none
  EXPECT_EQ(procfs::command_line(root_, "21"), std::vector<std::string>{});
  EXPECT_EQ(procfs::command_line(root_, "22"), std::nullopt);
}

TEST_F(FakeProc, EnvironmentIsTheBlockUpToItsLimit) {
  const std::string block = "RANK=3\0LOCAL_RANK=1\0"s;
  write("30", "environ", block);
  EXPECT_EQ(procfs::environment(root_, "30", 1 << 20), block);
  EXPECT_EQ(procfs::environment(root_, "30", 7), block.substr(0, 7));
  const std::string large(40000, 'x');  // more than one read's block
  write("31", "environ", large);
  EXPECT_EQ(procfs::environment(root_, "31", 1 << 20), large);
  EXPECT_EQ(procfs::environment(root_, "31", 20000)->size(), 20000u);
  EXPECT_EQ(procfs::environment(root_, "32", 1 << 20), std::nullopt);
}

TEST_F(FakeProc, ExecutableIsWhereItsLinkPoints) {
  fs::create_directories(root_ / "40");
  fs::create_symlink("/usr/bin/python3.11", root_ / "40" / "exe");
  EXPECT_EQ(procfs::executable(root_, "40"), fs::path("/usr/bin/python3.11"));
  EXPECT_EQ(procfs::executable(root_, "41"), std::nullopt);
}

TEST_F(FakeProc, ProcessIdsAreTheNumericEntries) {
  for (const char* name : {"1", "42", "self", "sys", "4x", "0", "-3"})
    fs::create_directories(root_ / name);
  std::vector<int> pids = procfs::process_ids(root_);
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<int>{1, 42}));
  EXPECT_EQ(procfs::process_ids(root_ / "missing"), std::vector<int>{});
}

// The same facts of this very process from the real /proc, by number and as "self".
TEST(RealProc, ThisProcessIsReadable) {
  const std::string pid = std::to_string(::getpid());
  const auto own = procfs::pid_namespace("/proc", "self");
  ASSERT_TRUE(own.has_value());
  struct stat info {};
  ASSERT_EQ(::stat("/proc/self/ns/pid", &info), 0);
  EXPECT_EQ(*own, static_cast<std::uint64_t>(info.st_ino));
  EXPECT_EQ(procfs::pid_namespace("/proc", pid), own);
  EXPECT_EQ(procfs::in_initial_pid_namespace(), *own == procfs::kInitialPidNamespace);

  const auto pids = procfs::namespace_pids("/proc", pid);
  ASSERT_TRUE(pids.has_value());
  EXPECT_EQ(pids->back(), static_cast<std::uint32_t>(::getpid()));
  EXPECT_EQ(procfs::parent_pid("/proc", pid), static_cast<int>(::getppid()));
  EXPECT_GT(procfs::start_time("/proc", "self").value_or(0), 0u);
  EXPECT_EQ(procfs::start_time("/proc", pid), procfs::start_time("/proc", "self"));
  EXPECT_FALSE(procfs::command_name("/proc", "self").value_or("").empty());
  EXPECT_TRUE(procfs::cgroups("/proc", "self").has_value());
  const auto arguments = procfs::command_line("/proc", pid);
  ASSERT_TRUE(arguments.has_value());
  ASSERT_FALSE(arguments->empty());
  EXPECT_EQ(fs::path(arguments->front()).filename(), "gpumem_procfs_tests");
  EXPECT_EQ(procfs::executable("/proc", "self"), fs::read_symlink("/proc/self/exe"));
  EXPECT_TRUE(procfs::environment("/proc", "self", 1 << 20).has_value());
  const std::vector<int> listed = procfs::process_ids("/proc");
  EXPECT_NE(std::find(listed.begin(), listed.end(), ::getpid()), listed.end());
}

}  // namespace
}  // namespace gpumem
