// The checked-JSON reader's input side (gpumem/internal/checked_json.hpp): the file opened within
// its cap, and the text fed to the parser with whitespace runs folded and tokens capped.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::json {
namespace {

constexpr std::size_t kBuffer = 1u << 16;

}  // namespace

std::string size_words(std::uint64_t bytes) {
  return bytes >= (1u << 20) && bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                                        : std::to_string(bytes) + " bytes";
}

BoundedSource::BoundedSource(std::istream& input, std::size_t token_bytes)
    : input_(&input), buffer_(kBuffer), token_bytes_(token_bytes) {}

BoundedSource::BoundedSource(std::string_view text, std::size_t token_bytes)
    : text_(text), token_bytes_(token_bytes) {}

BoundedSource::Iterator BoundedSource::begin() {
  current_ = next();
  current_position_ = position_;
  return Iterator(this);
}

void BoundedSource::refill() {
  const std::streamsize got =
      input_->rdbuf()->sgetn(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  filled_ = got > 0 ? static_cast<std::size_t>(got) : 0;
  at_ = 0;
}

std::optional<std::uint64_t> open_file(const std::string& path, const std::string& what,
                                       std::uint64_t max_bytes, std::ifstream& file,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::uint64_t> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return fail("is a folder, not " + what);
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes)
    return fail("too large for " + what + " (over " + size_words(max_bytes) + ")");
  file.open(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  return static_cast<std::uint64_t>(info.st_size);
}

std::string syntax_error(std::uint64_t position, std::uint64_t size, bool any_value,
                         const std::string& what) {
  if (!what.empty()) return "not valid JSON: " + what;
  if (!any_value && position > size) return "empty (still being written, or cut short?)";
  const std::string where = "at byte " + std::to_string(position);
  return position >= size ? "not valid JSON: it ends early " + where + " (cut short?)"
                          : "not valid JSON " + where;
}

}  // namespace gpumem::detail::json
