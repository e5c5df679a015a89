#include "publish/spool_directory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpumem/internal/spool.hpp"

namespace gpumem::detail {
namespace {

bool in_group(gid_t group) {
  if (::getegid() == group) return true;
  const int count = ::getgroups(0, nullptr);
  if (count <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  const int got = ::getgroups(count, groups.data());
  return got > 0 && std::find(groups.begin(), groups.begin() + got, group) != groups.begin() + got;
}

std::string mode_text(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

std::string spool_directory_refusal(const struct stat& info, uid_t caller, SpoolRole role) {
  if (!S_ISDIR(info.st_mode)) return "it is not a directory";
  const bool group_writable = (info.st_mode & S_IWGRP) != 0;
  const bool group_shared =
      group_writable && (info.st_mode & S_ISGID) != 0 && (info.st_mode & S_ISVTX) != 0;
  // A publisher in a group-shared spool trusts whoever the administrator made its owner (the
  // exporter's account, say); the exporter reads only its own or root's.
  const bool shared_with_writer =
      role == SpoolRole::writer && group_shared && in_group(info.st_gid);
  if (info.st_uid != caller && info.st_uid != 0 && !shared_with_writer) {
    return "it is owned by uid " + std::to_string(info.st_uid) + ", neither this user (uid " +
           std::to_string(caller) + ") nor root";
  }
  if ((info.st_mode & S_IWOTH) != 0) {
    return "others may write it (mode " + mode_text(info.st_mode) + ")";
  }
  if (group_writable && !group_shared) {
    return "its group may write it but it is not setgid and sticky (mode " +
           mode_text(info.st_mode) + "; a group-shared spool is mode 3770)";
  }
  if (role == SpoolRole::writer && info.st_uid != caller && !shared_with_writer) {
    return "it is root's and not group-shared with this user (mode " + mode_text(info.st_mode) +
           ", gid " + std::to_string(info.st_gid) + ")";
  }
  return {};
}

SpoolDirectory open_spool_directory(const std::filesystem::path& spool, SpoolRole role) {
  SpoolDirectory result;
  if (role == SpoolRole::writer) {
    std::error_code ignored;
    if (spool.has_parent_path()) std::filesystem::create_directories(spool.parent_path(), ignored);
    if (::mkdir(spool.c_str(), 0700) != 0 && errno != EEXIST) {
      result.refusal = std::string("it cannot be created: ") + std::strerror(errno);
      return result;
    }
  }
  const int fd = ::open(spool.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    struct stat entry {};
    if (error == ENOENT && role == SpoolRole::reader) {
      result.missing = true;
    } else if ((error == ELOOP || error == ENOTDIR) && ::lstat(spool.c_str(), &entry) == 0) {
      result.refusal = S_ISLNK(entry.st_mode) ? "it is a symbolic link" : "it is not a directory";
    } else {
      result.refusal = std::string("it cannot be opened: ") + std::strerror(error);
    }
    return result;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    result.refusal = std::string("it cannot be read: ") + std::strerror(errno);
  } else {
    result.refusal = spool_directory_refusal(info, ::geteuid(), role);
  }
  if (!result.refusal.empty()) {
    ::close(fd);
    return result;
  }
  result.fd = fd;
  return result;
}

std::string spool_directory_refusal(const std::filesystem::path& spool) {
  SpoolDirectory opened = open_spool_directory(spool, SpoolRole::reader);
  if (opened.fd >= 0) ::close(opened.fd);
  return opened.refusal;
}

}  // namespace gpumem::detail
