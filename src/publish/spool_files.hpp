// Names of the files in a spool directory, shared by the writer and the reader.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpumem::detail {

// "<pid>-<16 hex digits of the scope's FNV-1a hash>.trace": one file per process and scope.
std::string spool_file_name(unsigned pid, std::string_view scope);
// ".<pid>-<sequence>.tmp": hidden, and never taken for a record.
std::string spool_temporary_name(unsigned pid, unsigned sequence);
bool is_spool_record_name(std::string_view name);
bool is_spool_temporary_name(std::string_view name);
// Text without control characters: what a record's lines may hold.
bool is_plain_text(std::string_view text);
// A scope as publish_trace accepts it: 1 to max_scope_bytes bytes of plain text.
bool valid_scope(std::string_view scope);

// The pid of the process writing a temporary file, from its name; nullopt for any other name.
std::optional<unsigned> spool_temporary_writer(std::string_view name);

}  // namespace gpumem::detail
