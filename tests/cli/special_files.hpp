// Paths that are not regular files, for the tests of what gpumem's commands write to: a device
// node, a FIFO, a socket and symbolic links (to a terminal's stdout, to a regular file, to
// nothing). gpumem must refuse each one and leave it as it was.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "cli/command_runner.hpp"

namespace gpumem::testing {

struct SpecialFile {
  std::string path;
  mode_t type = 0;  // S_IFCHR, S_IFIFO, S_IFSOCK, S_IFLNK
};

class SpecialFiles {
 public:
  // Made in `folder`; the character device (a copy of /dev/null's numbers) only where mknod is
  // allowed (root with CAP_MKNOD).
  explicit SpecialFiles(const std::string& folder);
  ~SpecialFiles();
  SpecialFiles(const SpecialFiles&) = delete;
  SpecialFiles& operator=(const SpecialFiles&) = delete;

  const std::vector<SpecialFile>& files() const { return files_; }
  // Whether every one is still what it was (and the linked regular file still holds its text).
  bool unchanged(std::string* what) const;

  // Runs `argv_for(option, path)` for each option and each of these files and expects each
  // refused before anything happens: status 2, stderr starting "<command>: <option>: cannot
  // write <path>: it is a", nothing on stdout, every file as it was; `also` checks more.
  using Argv =
      std::function<std::vector<std::string>(const std::string& option, const std::string& path)>;
  using Check = std::function<void(const std::string& option, const std::string& path,
                                   const CommandResult& result)>;
  void expect_refused(const std::string& command, const std::vector<std::string>& options,
                      const Argv& argv_for, const Check& also = {}) const;

 private:
  std::string folder_;
  std::vector<SpecialFile> files_;
  int socket_ = -1;
};

}  // namespace gpumem::testing
