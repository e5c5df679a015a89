#include "attribution/document.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "attribution/document_stream.hpp"
#include "format.hpp"

namespace gpumem::cli::attribution {
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
  std::optional<Document> document =
      stream_document(file, static_cast<std::uint64_t>(info.st_size), path, error);
  if (file.bad()) return fail("cannot be read");
  return document;
}

std::optional<std::size_t> choose_snapshot(const Document& document, const std::string& which,
                                           std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::size_t> {
    if (error != nullptr) *error = document.path + ": " + why;
    return std::nullopt;
  };
  const auto& snapshots = document.snapshots;
  if (which == "peak" || which == "oom") {
    std::optional<std::size_t> chosen;
    for (std::size_t at = 0; at < snapshots.size(); ++at) {
      if (snapshots[at].what != which) continue;
      if (which == "oom") return at;
      if (!chosen || snapshots[at].level_bytes > snapshots[*chosen].level_bytes) chosen = at;
    }
    if (!chosen)
      return fail("no " + std::string(which == "oom" ? "out-of-memory" : "peak") + " snapshot (" +
                  std::to_string(snapshots.size()) + " snapshots)");
    return chosen;
  }
  if (which.empty() || which.find_first_not_of("0123456789") != std::string::npos ||
      which.size() > 18)
    return fail("--snapshot " + which + ": expected peak, oom or a snapshot's index");
  const std::size_t index = std::stoull(which);
  if (index >= snapshots.size())
    return fail("--snapshot " + which + " is out of range (" + std::to_string(snapshots.size()) +
                " snapshots" +
                (snapshots.empty() ? "" : ": 0 to " + std::to_string(snapshots.size() - 1)) + ")");
  return index;
}

std::string describe(const Document& document, const Snapshot& snapshot) {
  std::string text = snapshot.what == "oom" ? "out-of-memory failure" : "peak";
  if (snapshot.scope) text += " of scope " + *snapshot.scope;
  text += " on GPU " + std::to_string(snapshot.device);
  if (const Device* device = document.device(snapshot.device);
      device != nullptr && !device->name.empty())
    text += " (" + device->name + ")";
  if (snapshot.pid) text += ", pid " + std::to_string(*snapshot.pid);
  text += ", at " + format_seconds(snapshot.time_s);
  return text;
}

std::string frame_function(const Frame& frame) {
  if (frame.function) return *frame.function;
  if (frame.address) return *frame.address;
  return "??";
}

std::string frame_label(const Frame& frame) {
  if (frame.function) {
    if (!frame.file) return *frame.function;
    return *frame.function + " (" + *frame.file +
           (frame.line ? ":" + std::to_string(*frame.line) : std::string()) + ")";
  }
  std::string where = frame.module.value_or("");
  if (frame.address) where += (where.empty() ? "" : "+") + *frame.address;
  return where.empty() ? "??" : "?? (" + where + ")";
}

}  // namespace gpumem::cli::attribution
