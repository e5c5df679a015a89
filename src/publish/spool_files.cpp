#include "publish/spool_files.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>

#include "gpumem/publish.hpp"

namespace gpumem::detail {

std::string spool_file_name(unsigned pid, std::string_view scope) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : scope) {
    hash = (hash ^ c) * 0x100000001b3ull;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%u-%016llx.trace", pid, static_cast<unsigned long long>(hash));
  return text;
}

std::string spool_temporary_name(unsigned pid, unsigned sequence) {
  char text[32];
  std::snprintf(text, sizeof text, ".%u-%u.tmp", pid, sequence);
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

std::optional<unsigned> spool_temporary_writer(std::string_view name) {
  if (!is_spool_temporary_name(name)) return std::nullopt;
  unsigned pid = 0;
  const auto [end, status] = std::from_chars(name.data() + 1, name.data() + name.size(), pid);
  if (status != std::errc{} || *end != '-') return std::nullopt;
  return pid;
}

}  // namespace gpumem::detail
