// Paths that are not regular files, for the tests of what gpumem's commands write to: a device
// node, a FIFO, a socket and symbolic links (to a terminal's stdout, to a regular file, to
// nothing). gpumem must refuse each one and leave it as it was.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

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

 private:
  std::string folder_;
  std::vector<SpecialFile> files_;
  int socket_ = -1;
};

}  // namespace gpumem::testing
