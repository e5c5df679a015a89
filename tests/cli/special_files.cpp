#include "cli/special_files.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "cli/command_runner.hpp"

namespace gpumem::testing {
namespace {

constexpr const char* kKept = "a file a link points to: never to be replaced\n";

}  // namespace

SpecialFiles::SpecialFiles(const std::string& folder) : folder_(folder) {
  const std::string device = folder + "/null";
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    files_.push_back({device, S_IFCHR});
  const std::string fifo = folder + "/fifo";
  if (::mkfifo(fifo.c_str(), 0600) != 0) throw std::runtime_error("mkfifo " + fifo);
  files_.push_back({fifo, S_IFIFO});
  const std::string socket_path = folder + "/socket";
  socket_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() < sizeof address.sun_path) {
    std::strcpy(address.sun_path, socket_path.c_str());
    if (::bind(socket_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0)
      files_.push_back({socket_path, S_IFSOCK});
  }
  const std::string stdout_link = folder + "/stdout";
  const std::string kept = folder + "/kept.json";
  const std::string kept_link = folder + "/latest.json";
  const std::string dangling = folder + "/dangling.json";
  std::ofstream(kept) << kKept;
  if (::symlink("/proc/self/fd/1", stdout_link.c_str()) != 0 ||
      ::symlink(kept.c_str(), kept_link.c_str()) != 0 ||
      ::symlink((folder + "/nothing").c_str(), dangling.c_str()) != 0)
    throw std::runtime_error("symlink in " + folder);
  files_.push_back({stdout_link, S_IFLNK});
  files_.push_back({kept_link, S_IFLNK});
  files_.push_back({dangling, S_IFLNK});
}

SpecialFiles::~SpecialFiles() {
  if (socket_ >= 0) ::close(socket_);
}

bool SpecialFiles::unchanged(std::string* what) const {
  for (const SpecialFile& file : files_) {
    struct stat info {};
    if (::lstat(file.path.c_str(), &info) != 0 || (info.st_mode & S_IFMT) != file.type) {
      *what = file.path + " was replaced";
      return false;
    }
  }
  if (read_file(folder_ + "/kept.json") != kKept) {
    *what = folder_ + "/kept.json was written through its link";
    return false;
  }
  return true;
}

void SpecialFiles::expect_refused(const std::string& command,
                                  const std::vector<std::string>& options, const Argv& argv_for,
                                  const Check& also) const {
  for (const std::string& option : options) {
    for (const SpecialFile& file : files_) {
      const CommandResult result = run_command(argv_for(option, file.path));
      EXPECT_EQ(result.exit_code, 2) << option << " " << file.path << ": " << result.err;
      EXPECT_EQ(result.err.rfind(
                    command + ": " + option + ": cannot write " + file.path + ": it is a ", 0),
                0u)
          << result.err;
      EXPECT_EQ(result.out, "") << option << " " << file.path;
      if (also) also(option, file.path, result);
      std::string what;
      ASSERT_TRUE(unchanged(&what)) << option << ": " << what;
    }
  }
}

}  // namespace gpumem::testing
