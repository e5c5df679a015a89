// A `gpumem run --json` file read back (schema gpumem.run/1) for `gpumem report`: what each
// device, rank and the run as a whole reported, checked field by field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumem::cli {

inline constexpr const char* kRunSchema = "gpumem.run/1";

struct RunFileDevice {
  int device = 0;  // CUDA ordinal in that run
  std::optional<int> nvml_index;
  std::string name;
  std::string uuid;  // empty when the run could not tell
  std::int64_t total_bytes = 0;
  std::int64_t peak_bytes = 0;
};

struct RunFileRank {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> device;  // of its peak
  std::string uuid;
  std::int64_t peak_bytes = 0;
  std::string measured;  // exact or sampled
};

struct RunFile {
  std::string path;
  std::string host;  // empty in files from before hosts were recorded
  std::optional<int> gpumem_rank;
  std::vector<std::string> command;
  int exit_code = 0;
  double elapsed_s = 0;
  // When the command started and gpumem stopped measuring it (Unix time); absent in files from
  // before they were recorded, and then both are.
  std::optional<double> start_unix_s;
  std::optional<double> end_unix_s;
  std::string mode;  // exact, mixed or sampled
  double interval_s = 0;
  std::vector<RunFileDevice> devices;
  std::vector<RunFileRank> ranks;
};

// Reads and checks `path`; nullopt with `error` naming the file and what is wrong with it
// (unreadable, not JSON or cut short, another schema or version, a field missing or mistyped).
std::optional<RunFile> read_run_file(const std::string& path, std::string* error);

// The same from text already read (`path` names it in errors).
std::optional<RunFile> parse_run_file(const std::string& text, const std::string& path,
                                      std::string* error);

}  // namespace gpumem::cli
