// The one reader of gpumem.attribution/1: a file or a text, streamed into the model
// (document_stream.cpp), each field checked (document_fields.cpp); a file that is a PyTorch
// snapshot (source_format) goes to its reader instead (torch_snapshot_read.cpp).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem::detail::attribution {
namespace {

// A million live blocks take about 150 MB of JSON; this leaves room for ten times as many.
constexpr std::int64_t kMaxDocument = 2ll << 30;

}  // namespace

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
  auto fail = [&](const std::string& why) -> std::optional<Document> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return fail("is a folder, not an attribution document");
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (info.st_size > kMaxDocument) return fail("too large for an attribution document");
  std::ifstream file;
  std::vector<char> buffer(1 << 16);
  file.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  file.open(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  // A PyTorch snapshot is read by its own reader (torch_snapshot_read.cpp).
  if (source_format(std::string(1, static_cast<char>(file.peek()))) == SourceFormat::torch_pickle)
    return read_torch_snapshot(path, error);
  std::optional<Document> document =
      stream_document(file, static_cast<std::uint64_t>(info.st_size), path, error);
  if (file.bad()) return fail("cannot be read");
  return document;
}

}  // namespace gpumem::detail::attribution
