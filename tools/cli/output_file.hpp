// Output files: what gpumem may write to, decided in one place, and files written whole or not
// at all (a temporary file in the same folder, renamed over the target once complete, so a
// reader never sees half a file and a failure leaves none).
//
// gpumem writes only regular files: a new one, or one it replaces. A path that names anything
// else (a device node such as /dev/null, a FIFO, a socket, a folder) or a symbolic link (it
// would be replaced by a file, not written through) is refused before the command runs, never
// replaced; `-` names stdout.
#pragma once

#include <string>
#include <vector>

namespace gpumem::cli {

// `-`: the output goes to stdout.
inline constexpr const char* kStdoutPath = "-";

// An output option and the path given to it ("--json", "out.json"); an empty path: not asked for.
struct OutputRequest {
  const char* option;
  std::string path;
};

// Whether every requested output can be written, checked before any work starts: each path is
// `-` or a regular file, new or replaced, in a folder that accepts a new file; at most one is
// `-`, and no two name the same file. false with one line naming the option, the path and why
// in `error`.
bool check_outputs(const std::vector<OutputRequest>& outputs, std::string* error);

// Whether `path` can be written (the rules above, for one path that is not `-`); the reason in
// `error` when not.
bool check_writable(const std::string& path, std::string* error);

// Writes `content` to `path` (stdout for `-`), atomically; the target is checked again just
// before the rename, and anything but a regular file (or no file) is left alone. false with the
// reason in `error` on failure.
bool write_output(const std::string& path, const std::string& content, std::string* error);

}  // namespace gpumem::cli
