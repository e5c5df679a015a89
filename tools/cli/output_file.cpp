#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "gpumem/internal/environment.hpp"

namespace gpumem::cli {
namespace {

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string describe(const std::string& path, const char* what) {
  return "cannot write " + path + ": " + what;
}

// mkstemp in the target's folder: same filesystem, so the rename is atomic.
int create_temporary(const std::string& path, std::string& temporary) {
  std::string pattern =
      folder_of(path) + "/." + std::filesystem::path(path).filename().string() + ".XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd >= 0) temporary.assign(name.data());
  return fd;
}

}  // namespace

bool check_writable(const std::string& path, std::string* error) {
  struct stat info {};
  if (path.empty()) {
    if (error != nullptr) *error = "an output path is empty";
    return false;
  }
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    if (error != nullptr) *error = describe(path, "it is a directory");
    return false;
  }
  std::string temporary;
  const int fd = create_temporary(path, temporary);
  if (fd < 0) {
    if (error != nullptr) *error = describe(path, std::strerror(errno));
    return false;
  }
  ::close(fd);
  ::unlink(temporary.c_str());
  return true;
}

bool write_atomically(const std::string& path, const std::string& content, std::string* error) {
  std::string temporary;
  const int fd = create_temporary(path, temporary);
  if (fd < 0) {
    if (error != nullptr) *error = describe(path, std::strerror(errno));
    return false;
  }
  const char* data = content.data();
  std::size_t left = content.size();
  bool ok = true;
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      ok = false;
      break;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  // A new file gets the usual permissions (mkstemp makes it 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ok = ok && ::fchmod(fd, 0666 & ~mask) == 0;
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(temporary.c_str(), path.c_str()) == 0) return true;
  if (error != nullptr) *error = describe(path, std::strerror(ok ? errno : saved));
  ::unlink(temporary.c_str());
  return false;
}

std::string temporary_folder() {
  const char* folder = support::env_value("TMPDIR");
  return folder != nullptr ? folder : "/tmp";
}

}  // namespace gpumem::cli
