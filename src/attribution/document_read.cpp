// The one reader of gpumem.attribution/1: a file or a text, streamed into the model
// (document_stream.cpp), each field checked (document_fields.cpp); a file that is a PyTorch
// snapshot (source_format) goes to its reader instead (torch_snapshot_read.cpp).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "attribution/document_fields.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/checked_json.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem::detail::attribution {
const Device* Document::device(int ordinal) const {
  for (const Device& entry : devices) {
    if (entry.ordinal == ordinal) return &entry;
  }
  return nullptr;
}

std::optional<Document> parse_document(const std::string& content, const std::string& path,
                                       std::string* error) {
  return stream_document(std::string_view(content), path, error);
}

std::optional<Document> read_document(const std::string& path, std::string* error) {
  std::ifstream file;
  const std::optional<std::uint64_t> size =
      json::open_file(path, "an attribution document", fields::kCaps.file_bytes, file, error);
  if (!size) return std::nullopt;
  // A PyTorch snapshot is read by its own reader (torch_snapshot_read.cpp).
  if (source_format(std::string(1, static_cast<char>(file.peek()))) == SourceFormat::torch_pickle)
    return read_torch_snapshot(path, error);
  std::optional<Document> document = stream_document(file, *size, path, error);
  if (document && file.bad()) {
    if (error != nullptr) *error = path + ": cannot be read";
    return std::nullopt;
  }
  return document;
}

}  // namespace gpumem::detail::attribution
