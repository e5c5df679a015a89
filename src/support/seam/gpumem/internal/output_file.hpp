// Output files: what gpumem may write to, decided in one place for every writer (the gpumem
// command's --json/--plot/--svg/--html/... outputs, the library's document writers and the pytest
// plugin's --gpumem-json, through the Python binding), and files written whole or not at all (a
// temporary file in the same folder, renamed over the target once complete, so that a reader
// never sees half a file and a failure leaves none).
//
// The rule: an output is `-` (stdout) or a regular file, new or replaced. A path that names
// anything else (a device node such as /dev/null, a FIFO, a socket, a folder) or a symbolic link
// (/dev/stdout and /proc/self/fd/1 are links: gpumem would replace it with a file, not write
// through it) is refused before the command does any work, and never touched. A replaced file
// keeps its permissions (and its owner and group where the writer may keep them); a new one gets
// 0666 less the umask. Two outputs of one command naming one file, however spelled (`x.json`,
// `./x.json`, `dir/../x.json`, through a linked folder), are refused before anything runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

// `-`: the output goes to stdout.
inline constexpr const char* kStdoutPath = "-";

// An output option and the path given to it ("--json", "out.json"); an empty path: not asked for.
struct OutputRequest {
  std::string option;
  std::string path;
};

// Whether every requested output can be written, checked before any work starts: each path is
// `-` or a regular file, new or replaced, in a folder that accepts a new file; at most one is
// `-`, and no two name the same file. false with one line naming the option, the path and why
// in `error` (the path as given: show it through shown_text() on a terminal).
bool check_outputs(const std::vector<OutputRequest>& outputs, std::string* error);

// Whether `path` can be written (the rule above, for one path that is not `-`); the reason in
// `error` when not ("cannot write PATH: it is a FIFO, left alone: ...").
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) bool check_writable(const std::string& path,
                                                          std::string* error);

// What a path resolves to as an output, to tell whether two outputs name one file: its folder
// made absolute with every link and `..` resolved, and its last name; the path itself when its
// folder cannot be resolved.
std::string output_identity(const std::string& path);

// A file being written: a temporary file beside the target, renamed over it by commit(). The
// target is checked again just before the rename, and anything but a regular file (or no file)
// is left alone. For writers that produce their output piece by piece; write_output() below is
// the whole-string form.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
class __attribute__((visibility("hidden"))) OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // an uncommitted file is removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Starts writing `path` (stdout for `-`); false with the reason in `error`.
  bool open(const std::string& path, std::string* error);
  // Appends; false (and the reason in `error`) on a write error, after which commit() fails.
  bool write(std::string_view text, std::string* error);
  // Makes the file the target, atomically; false with the reason in `error`.
  bool commit(std::string* error);

 private:
  std::string path_;
  std::string temporary_;
  int fd_ = -1;
  bool to_stdout_ = false;
  bool failed_ = false;
};

// Writes `content` to `path` (stdout for `-`), atomically, by the rule above. false with the
// reason in `error` on failure.
bool write_output(const std::string& path, std::string_view content, std::string* error);

}  // namespace gpumem::detail

#pragma GCC visibility pop
