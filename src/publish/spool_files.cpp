#include "publish/spool_files.hpp"

#include <charconv>
#include <cstdio>

#include "gpumem/internal/procfs.hpp"
#include "gpumem/publish.hpp"

namespace gpumem::detail {
namespace {

// Reads "<number>-" from the front of `text`; false when it is not there.
template <class Int>
bool take_number(std::string_view& text, Int& out) {
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (status != std::errc{} || end == text.data() || end == text.data() + text.size() ||
      *end != '-') {
    return false;
  }
  text.remove_prefix(static_cast<std::size_t>(end - text.data()) + 1);
  return true;
}

// The writer at the front of a name: "<pid>-<ns>-<start>-<rest>" (the rest in `text`), or an
// older writer's "<pid>-<rest>".
std::optional<SpoolWriter> writer_of(std::string_view text) {
  SpoolWriter writer;
  if (!take_number(text, writer.pid)) return std::nullopt;
  std::string_view rest = text;
  SpoolWriter full = writer;
  if (take_number(rest, full.pid_namespace) && take_number(rest, full.start)) {
    full.full = true;
    return full;
  }
  return writer;
}

}  // namespace

std::string spool_file_name(const SpoolWriter& writer, std::string_view scope) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : scope) {
    hash = (hash ^ c) * 0x100000001b3ull;
  }
  char text[96];
  std::snprintf(text, sizeof text, "%u-%llu-%llu-%016llx.trace", writer.pid,
                static_cast<unsigned long long>(writer.pid_namespace),
                static_cast<unsigned long long>(writer.start),
                static_cast<unsigned long long>(hash));
  return text;
}

std::string spool_temporary_name(const SpoolWriter& writer, unsigned sequence) {
  char text[96];
  std::snprintf(text, sizeof text, ".%u-%llu-%llu-%u.tmp", writer.pid,
                static_cast<unsigned long long>(writer.pid_namespace),
                static_cast<unsigned long long>(writer.start), sequence);
  return text;
}

bool is_spool_record_name(std::string_view name) {
  return !name.empty() && name.front() != '.' && name.ends_with(".trace");
}

bool is_spool_temporary_name(std::string_view name) {
  return !name.empty() && name.front() == '.' && name.ends_with(".tmp");
}

bool is_plain_text(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool valid_scope(std::string_view scope) {
  return !scope.empty() && scope.size() <= max_scope_bytes && is_plain_text(scope);
}

std::optional<SpoolWriter> spool_record_writer(std::string_view name) {
  if (!is_spool_record_name(name)) return std::nullopt;
  return writer_of(name);
}

std::optional<SpoolWriter> spool_temporary_writer(std::string_view name) {
  if (!is_spool_temporary_name(name)) return std::nullopt;
  name.remove_prefix(1);
  return writer_of(name);
}

std::string pid_namespace_text(std::uint64_t inode) {
  return inode == 0 ? std::string() : procfs::pid_namespace_text(inode);
}

std::uint64_t pid_namespace_inode(std::string_view text) {
  if (!text.starts_with("pid:[") || !text.ends_with(']')) return 0;
  text = text.substr(5, text.size() - 6);
  std::uint64_t inode = 0;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), inode);
  return status == std::errc{} && end == text.data() + text.size() ? inode : 0;
}

}  // namespace gpumem::detail
