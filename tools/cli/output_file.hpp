// Output files written whole or not at all: a temporary file in the same folder, renamed over
// the target once complete, so a reader never sees half a file and a failure leaves none.
#pragma once

#include <string>

namespace gpumem::cli {

// Whether `path` can be written (its folder exists and accepts a new file), checked before any
// work starts; the reason in `error` when not.
bool check_writable(const std::string& path, std::string* error);

// Writes `content` to `path` atomically; false with the reason in `error` on failure.
bool write_atomically(const std::string& path, const std::string& content, std::string* error);

// Where gpumem's own temporary files go: $TMPDIR, else /tmp.
std::string temporary_folder();

}  // namespace gpumem::cli
