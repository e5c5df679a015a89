#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

#include "gpumem/internal/environment.hpp"

namespace gpumem::cli {
namespace {

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string describe(const std::string& path, const std::string& what) {
  return "cannot write " + path + ": " + what;
}

// What a file that is not a regular one is, as a refusal says it; nullopt for a regular file.
std::optional<std::string> not_regular(const std::string& path, const struct stat& info) {
  const char* kind = nullptr;
  if (S_ISREG(info.st_mode)) return std::nullopt;
  if (S_ISDIR(info.st_mode)) return std::string("it is a directory");
  if (S_ISLNK(info.st_mode)) {
    std::error_code error;
    const std::filesystem::path target = std::filesystem::read_symlink(path, error);
    return "it is a symbolic link" + (error ? std::string() : " (to " + target.string() + ")") +
           ", which gpumem would replace rather than write through (name the file itself; '-' "
           "is stdout)";
  }
  if (S_ISCHR(info.st_mode)) kind = "a character device";
  if (S_ISBLK(info.st_mode)) kind = "a block device";
  if (S_ISFIFO(info.st_mode)) kind = "a FIFO";
  if (S_ISSOCK(info.st_mode)) kind = "a socket";
  return "it is " + std::string(kind != nullptr ? kind : "not a regular file") +
         ", left alone: gpumem writes only regular files ('-' is stdout)";
}

// The refusal for what `path` names now, if it names something gpumem must not replace.
std::optional<std::string> refusal(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::nullopt;  // a new file (its folder is checked apart)
    return std::string(std::strerror(errno));
  }
  return not_regular(path, info);
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

// One file's identity among the outputs: the same file named twice must not be written twice.
std::string identity(const std::string& path) {
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

bool write_stdout(const std::string& content, std::string* error) {
  std::cout.write(content.data(), static_cast<std::streamsize>(content.size()));
  std::cout.flush();
  if (std::cout) return true;
  if (error != nullptr) *error = "cannot write to stdout";
  return false;
}

}  // namespace

bool check_writable(const std::string& path, std::string* error) {
  if (path.empty()) {
    if (error != nullptr) *error = "an output path is empty";
    return false;
  }
  if (const std::optional<std::string> why = refusal(path)) {
    if (error != nullptr) *error = describe(path, *why);
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

bool check_outputs(const std::vector<OutputRequest>& outputs, std::string* error) {
  const OutputRequest* on_stdout = nullptr;
  std::vector<std::pair<std::string, const OutputRequest*>> files;
  for (const OutputRequest& output : outputs) {
    if (output.path.empty()) continue;
    if (output.path == kStdoutPath) {
      if (on_stdout != nullptr) {
        if (error != nullptr)
          *error = std::string(on_stdout->option) + " and " + output.option +
                   " both name '-': only one output can go to stdout";
        return false;
      }
      on_stdout = &output;
      continue;
    }
    std::string why;
    if (!check_writable(output.path, &why)) {
      if (error != nullptr) *error = std::string(output.option) + ": " + why;
      return false;
    }
    const std::string id = identity(output.path);
    for (const auto& [other_id, other] : files) {
      if (other_id == id) {
        if (error != nullptr)
          *error = std::string(other->option) + " and " + output.option + " both name " +
                   output.path + ": each output needs a file of its own";
        return false;
      }
    }
    files.emplace_back(id, &output);
  }
  return true;
}

bool write_output(const std::string& path, const std::string& content, std::string* error) {
  if (path == kStdoutPath) return write_stdout(content, error);
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
  // What the path names may have changed since the check: only a regular file is replaced.
  if (ok) {
    if (const std::optional<std::string> why = refusal(path)) {
      if (error != nullptr) *error = describe(path, *why);
      ::unlink(temporary.c_str());
      return false;
    }
  }
  if (ok && ::rename(temporary.c_str(), path.c_str()) == 0) return true;
  if (error != nullptr) *error = describe(path, std::strerror(ok ? errno : saved));
  ::unlink(temporary.c_str());
  return false;
}

}  // namespace gpumem::cli
