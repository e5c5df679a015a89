// The one rule for what gpumem writes to (gpumem/internal/output_file.hpp): `-` or a regular file,
// new or replaced atomically and keeping its mode, never through a link or into a special file;
// two outputs that resolve to one file refused, however they are spelled.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpumem/internal/output_file.hpp"

namespace gpumem::detail {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class OutputRule : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("gpumem-output-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    previous_ = fs::current_path();
  }
  void TearDown() override {
    fs::current_path(previous_);
    fs::remove_all(folder_);
  }
  // Files other than `keep` left in the folder (a temporary that was not cleaned up).
  std::vector<std::string> litter(const std::vector<std::string>& keep) const {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(folder_)) {
      const std::string name = entry.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) left.push_back(name);
    }
    return left;
  }
  fs::path folder_;
  fs::path previous_;
};

TEST_F(OutputRule, WritesANewFileWithTheUsualModeAndLeavesNoTemporary) {
  const mode_t mask = ::umask(022);
  std::string error;
  ASSERT_TRUE(write_output((folder_ / "new.json").string(), "{}\n", &error)) << error;
  ::umask(mask);
  EXPECT_EQ(read_all(folder_ / "new.json"), "{}\n");
  EXPECT_EQ(mode_of(folder_ / "new.json"), 0644u);
  EXPECT_TRUE(litter({"new.json"}).empty());
}

// Issue 30: replacing an existing 0600 output made it 0644.
TEST_F(OutputRule, AReplacedFileKeepsItsMode) {
  const fs::path path = folder_ / "private.json";
  std::ofstream(path) << "old";
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  const mode_t mask = ::umask(022);
  std::string error;
  ASSERT_TRUE(write_output(path.string(), "new", &error)) << error;
  ::umask(mask);
  EXPECT_EQ(read_all(path), "new");
  EXPECT_EQ(mode_of(path), 0600u);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(write_output(path.string(), "newer", &error)) << error;
  EXPECT_EQ(mode_of(path), 0640u);
}

// Issue 30: the plugin wrote through a link into a victim file; /dev/stdout and /proc/self/fd/1
// are links too.
TEST_F(OutputRule, RefusesALinkAndLeavesWhatItNamesAlone) {
  const fs::path victim = folder_ / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, folder_ / "link.json");
  fs::create_symlink(folder_ / "nowhere", folder_ / "dangling.json");
  for (const fs::path& path : {folder_ / "link.json", folder_ / "dangling.json",
                               fs::path("/dev/stdout"), fs::path("/proc/self/fd/1")}) {
    std::string error;
    EXPECT_FALSE(check_writable(path.string(), &error)) << path;
    EXPECT_NE(error.find("it is a symbolic link"), std::string::npos) << error;
    EXPECT_FALSE(write_output(path.string(), "evil", &error)) << path;
  }
  EXPECT_EQ(read_all(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(folder_ / "link.json"));
  EXPECT_FALSE(fs::exists(folder_ / "nowhere"));
  EXPECT_TRUE(litter({"victim", "link.json", "dangling.json"}).empty());
}

// Issue 30: a FIFO hung the plugin's session at its end; a directory failed only after every
// test ran. Both are refused by the check, at once.
TEST_F(OutputRule, RefusesSpecialFilesWithoutOpeningThem) {
  const fs::path fifo = folder_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(folder_ / "dir");
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = (folder_ / "sock").string();
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::pair<fs::path, const char*> cases[] = {{fifo, "it is a FIFO"},
                                                    {folder_ / "dir", "it is a directory"},
                                                    {socket_path, "it is a socket"},
                                                    {"/dev/null", "it is a character device"}};
  for (const auto& [path, why] : cases) {
    std::string error;
    EXPECT_FALSE(check_outputs({{"--json", path.string()}}, &error)) << path;
    EXPECT_EQ(error.rfind("--json: cannot write " + path.string() + ": " + why, 0), 0u) << error;
    EXPECT_FALSE(write_output(path.string(), "x", &error)) << path;
  }
  ::close(listener);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(folder_ / "dir"));
}

// Issue 30: `gpumem run --json x.json --plot ./x.json` wrote both to one file.
TEST_F(OutputRule, TwoSpellingsOfOneFileAreRefused) {
  fs::create_directory(folder_ / "sub");
  fs::create_directory_symlink(folder_ / "sub", folder_ / "linked");
  fs::current_path(folder_);
  const std::vector<std::pair<std::string, std::string>> same = {
      {"x.json", "./x.json"},
      {"x.json", (folder_ / "x.json").string()},
      {"x.json", "sub/../x.json"},
      {"sub/x.json", "linked/x.json"},
      {"sub/x.json", "linked/./x.json"},
  };
  for (const auto& [first, second] : same) {
    std::string error;
    EXPECT_FALSE(check_outputs({{"--json", first}, {"--plot", second}}, &error))
        << first << " " << second;
    EXPECT_EQ(error.rfind("--json and --plot both name " + first + " and " + second, 0), 0u)
        << error;
    EXPECT_NE(error.find("each output needs a file of its own"), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(check_outputs({{"--json", "a.json"}, {"--svg", "a.json"}}, &error));
  EXPECT_EQ(error, "--json and --svg both name a.json: each output needs a file of its own");
  EXPECT_TRUE(check_outputs({{"--json", "x.json"}, {"--plot", "sub/x.json"}}, &error)) << error;
  EXPECT_FALSE(check_outputs({{"--json", "-"}, {"--plot", "-"}}, &error));
  EXPECT_EQ(error, "--json and --plot both name '-': only one output can go to stdout");
  EXPECT_TRUE(litter({"sub", "linked"}).empty());
}

TEST_F(OutputRule, AFileWrittenPieceByPieceAppearsOnlyWhenCommitted) {
  const fs::path path = folder_ / "doc.json";
  std::ofstream(path) << "old";
  {
    OutputFile file;
    std::string error;
    ASSERT_TRUE(file.open(path.string(), &error)) << error;
    ASSERT_TRUE(file.write("{\"a\":", &error));
    EXPECT_EQ(read_all(path), "old");  // a reader sees the old file until the commit
  }                                    // not committed: the old file stays, no temporary is left
  EXPECT_EQ(read_all(path), "old");
  EXPECT_TRUE(litter({"doc.json"}).empty());
  OutputFile file;
  std::string error;
  ASSERT_TRUE(file.open(path.string(), &error)) << error;
  ASSERT_TRUE(file.write("{\"a\":", &error));
  ASSERT_TRUE(file.write("1}", &error));
  ASSERT_TRUE(file.commit(&error)) << error;
  EXPECT_EQ(read_all(path), "{\"a\":1}");
  EXPECT_TRUE(litter({"doc.json"}).empty());
}

// The target may change between the check and the rename: a link put there meanwhile is left
// alone, and the write fails with the reason.
TEST_F(OutputRule, ALinkMadeWhileWritingIsNotReplaced) {
  const fs::path path = folder_ / "out.json";
  const fs::path victim = folder_ / "victim";
  std::ofstream(victim) << "precious";
  OutputFile file;
  std::string error;
  ASSERT_TRUE(file.open(path.string(), &error)) << error;
  ASSERT_TRUE(file.write("data", &error));
  fs::create_symlink(victim, path);
  EXPECT_FALSE(file.commit(&error));
  EXPECT_NE(error.find("it is a symbolic link"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_symlink(path));
  EXPECT_EQ(read_all(victim), "precious");
}

TEST_F(OutputRule, AFolderThatCannotBeWrittenIsRefusedByTheCheck) {
  std::string error;
  EXPECT_FALSE(check_writable((folder_ / "missing" / "x.json").string(), &error));
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_FALSE(check_writable("", &error));
}

}  // namespace
}  // namespace gpumem::detail
