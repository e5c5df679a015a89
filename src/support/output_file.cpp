// The one rule for what gpumem writes to (gpumem/internal/output_file.hpp): `-` or a regular
// file, new or replaced atomically, never through a link or into a special file.
#include "gpumem/internal/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

namespace gpumem::detail {
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

// The refusal for what `path` names now, if it names something gpumem must not replace; what it
// is in `info` (st_mode 0: nothing there yet).
std::optional<std::string> refusal(const std::string& path, struct stat& info) {
  info = {};
  if (::lstat(path.c_str(), &info) != 0) {
    info = {};
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
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) temporary.assign(name.data());
  return fd;
}

void set_error(std::string* error, std::string text) {
  if (error != nullptr) *error = std::move(text);
}

}  // namespace

std::string output_identity(const std::string& path) {
  // The last name is never a link (check_writable refuses one), so the file is its folder, fully
  // resolved, and that name; a name that resolves to nothing (empty, ".", "..") stays as given.
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) return path;
  const std::filesystem::path name = absolute.filename();
  if (name.empty() || name == "." || name == "..") return absolute.lexically_normal().string();
  const std::filesystem::path folder =
      std::filesystem::weakly_canonical(absolute.parent_path(), error);
  return error ? absolute.lexically_normal().string() : (folder / name).string();
}

bool check_writable(const std::string& path, std::string* error) {
  if (path.empty()) {
    set_error(error, "an output path is empty");
    return false;
  }
  struct stat info {};
  if (const std::optional<std::string> why = refusal(path, info)) {
    set_error(error, describe(path, *why));
    return false;
  }
  std::string temporary;
  const int fd = create_temporary(path, temporary);
  if (fd < 0) {
    set_error(error, describe(path, std::strerror(errno)));
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
        set_error(error, on_stdout->option + " and " + output.option +
                             " both name '-': only one output can go to stdout");
        return false;
      }
      on_stdout = &output;
      continue;
    }
    std::string why;
    if (!check_writable(output.path, &why)) {
      set_error(error, output.option + ": " + why);
      return false;
    }
    const std::string id = output_identity(output.path);
    for (const auto& [other_id, other] : files) {
      if (other_id == id) {
        const std::string named = other->path == output.path
                                      ? output.path
                                      : other->path + " and " + output.path + " (both " + id + ")";
        set_error(error, other->option + " and " + output.option + " both name " + named +
                             ": each output needs a file of its own");
        return false;
      }
    }
    files.emplace_back(id, &output);
  }
  return true;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

bool OutputFile::open(const std::string& path, std::string* error) {
  path_ = path;
  failed_ = false;
  if (path == kStdoutPath) {
    to_stdout_ = true;
    return true;
  }
  struct stat info {};
  if (const std::optional<std::string> why = refusal(path, info)) {
    set_error(error, describe(path, *why));
    failed_ = true;
    return false;
  }
  fd_ = create_temporary(path, temporary_);
  if (fd_ < 0) {
    set_error(error, describe(path, std::strerror(errno)));
    failed_ = true;
    return false;
  }
  return true;
}

bool OutputFile::write(std::string_view text, std::string* error) {
  if (failed_) return false;
  if (to_stdout_) {
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (std::cout) return true;
    failed_ = true;
    set_error(error, "cannot write to stdout");
    return false;
  }
  if (fd_ < 0) {
    failed_ = true;
    set_error(error, describe(path_, "not open"));
    return false;
  }
  while (!text.empty()) {
    const ssize_t written = ::write(fd_, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      failed_ = true;
      set_error(error, describe(path_, written < 0 ? std::strerror(errno) : "nothing written"));
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

bool OutputFile::commit(std::string* error) {
  if (to_stdout_) {
    std::cout.flush();
    if (!failed_ && std::cout) return true;
    set_error(error, "cannot write to stdout");
    return false;
  }
  if (failed_ || fd_ < 0) {
    if (!failed_) set_error(error, describe(path_, "not open"));
    return false;
  }
  // What the path names may have changed since the check: only a regular file is replaced, and
  // it keeps its permissions (and owner and group, where this process may set them); a new file
  // gets the usual permissions (mkstemp makes it 0600).
  struct stat target {};
  const std::optional<std::string> why = refusal(path_, target);
  bool ok = !why.has_value();
  int saved = 0;
  if (ok) {
    mode_t mode = 0;
    if (S_ISREG(target.st_mode)) {
      mode = target.st_mode & 07777;
      if (target.st_uid != ::geteuid() || target.st_gid != ::getegid()) {
        // Best effort: an unprivileged writer cannot give its file away, and keeps its own.
        (void)::fchown(fd_, target.st_uid, target.st_gid);
      }
    } else {
      const mode_t mask = ::umask(0);
      ::umask(mask);
      mode = 0666 & ~mask;
    }
    ok = ::fchmod(fd_, mode) == 0 && ::fsync(fd_) == 0;
    saved = errno;
  }
  ok = (::close(fd_) == 0) && ok;
  fd_ = -1;
  if (why) {
    set_error(error, describe(path_, *why));
    return false;
  }
  if (ok && ::rename(temporary_.c_str(), path_.c_str()) == 0) {
    temporary_.clear();
    return true;
  }
  set_error(error, describe(path_, std::strerror(ok ? errno : saved)));
  return false;
}

bool write_output(const std::string& path, std::string_view content, std::string* error) {
  OutputFile file;
  return file.open(path, error) && file.write(content, error) && file.commit(error);
}

}  // namespace gpumem::detail
