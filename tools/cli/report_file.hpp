// A `gpumem report --json` file read back (schema gpumem.report/1, report_json.cpp writes it) for
// `gpumem diff`: the peak of each device and rank of the job, checked field by field. Only what
// a comparison needs is read; the rest of the document is left alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumem::cli {

inline constexpr const char* kReportSchema = "gpumem.report/1";

struct ReportFileDevice {
  std::string key;   // the report's own: the UUID, else node and ordinal
  std::string uuid;  // empty when the runs could not tell
  std::string node;
  int device = 0;  // CUDA ordinal
  std::string name;
  std::int64_t peak_bytes = 0;
};

struct ReportFileRank {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::optional<int> device;
  std::int64_t peak_bytes = 0;
};

struct ReportFile {
  std::string path;
  std::string mode;
  std::vector<ReportFileDevice> devices;
  std::vector<ReportFileRank> ranks;
};

// Reads and checks `path`; nullopt with `error` naming the file and what is wrong with it.
std::optional<ReportFile> read_report_file(const std::string& path, std::string* error);

// The same from text already read (`path` names it in errors).
std::optional<ReportFile> parse_report_file(const std::string& text, const std::string& path,
                                            std::string* error);

}  // namespace gpumem::cli
