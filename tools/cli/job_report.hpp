// `gpumem report`'s model: any number of run files (one per node or per rank of a job)
// combined into peaks per rank, per node and per device, and the job's maximum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_file.hpp"

namespace gpumem::cli {

struct JobInput {
  std::string path;
  std::string node;
  std::string mode;
  std::optional<int> gpumem_rank;
  int exit_code = 0;
  double elapsed_s = 0;
  std::optional<double> start_unix_s, end_unix_s;  // absent in older run files
};

struct JobDevice {
  std::string key;  // the UUID, else "node:index" (a run that could not read it)
  std::string uuid;
  std::string node;
  std::optional<int> nvml_index;
  int device = 0;  // CUDA ordinal, in the first run that measured it
  std::string name;
  std::int64_t total_bytes = 0;
  // The run's peak on the device. When several runs used it (gpumem run per rank sharing a GPU,
  // or one job's steps one after another), the highest, over time, of the sum of the peaks of
  // the runs running at that moment: never below what they held together, possibly above
  // (their peaks need not coincide). Runs without times (older files) are all summed.
  std::int64_t peak_bytes = 0;
  int runs_using = 0;  // runs with a non-zero peak on it
  enum class Combined {
    one,              // one run used it
    highest,          // several, none overlapping another: the highest run's peak
    sum,              // the sum of `runs_summed` runs that overlapped
    overlap_unknown,  // the sum of all: some file has no start and end time
  };
  Combined combined = Combined::one;
  int runs_summed = 0;                  // runs whose peaks make up peak_bytes
  std::optional<std::size_t> top_rank;  // index in JobReport::ranks of the rank that held most
};

struct JobRank {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::string file;
  std::string device_key;  // of its peak; empty when it used none
  std::optional<int> device;
  std::string device_name;
  std::int64_t peak_bytes = 0;
  std::string measured;  // exact or sampled
};

struct JobNode {
  std::string name;
  int runs = 0;
  int ranks = 0;
  int devices_used = 0;
  std::string mode;
  std::int64_t peak_bytes = 0;             // the highest device peak on the node
  std::optional<std::size_t> peak_device;  // index in JobReport::devices
};

struct JobReport {
  std::vector<JobInput> inputs;
  std::string mode;  // exact only if every run was
  std::vector<JobRank> ranks;
  std::vector<JobNode> nodes;
  std::vector<JobDevice> devices;
  // The device with the job's highest peak (none when no run used a GPU), and on it the rank
  // that held most.
  std::optional<std::size_t> maximum;
  std::vector<std::string> warnings;  // files that look like different jobs, duplicated ranks
};

JobReport combine_runs(const std::vector<RunFile>& runs);

// "rank 3 (local 1)", "local rank 1", for tables and messages.
// "sum", "highest", ... for the JSON.
const char* to_string(JobDevice::Combined combined);

std::string rank_label(const std::optional<int>& rank, const std::optional<int>& local_rank);

}  // namespace gpumem::cli
