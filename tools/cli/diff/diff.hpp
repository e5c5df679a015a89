// `gpumem diff A B`: what changed between two runs of the same work. The inputs are two run
// files (gpumem.run/1), two reports (gpumem.report/1) or two attribution documents
// (gpumem.attribution/1), each read by its format's one reader; the comparison is of the peak per
// device and per rank and, where both sides carry attribution, of the bytes each allocating stack
// held at the peak.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/document.hpp"

namespace gpumem::cli::diff {

// One device's peak in an input, whatever its format.
struct DevicePeak {
  std::string uuid;  // empty when the input could not tell
  std::string node;  // reports: the node; otherwise empty
  int ordinal = 0;   // CUDA ordinal
  std::string name;
  std::int64_t peak_bytes = 0;
};

struct RankPeak {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::int64_t peak_bytes = 0;
};

// An input read: its kind (the schema it declared) and the peaks it holds.
struct Input {
  std::string path;
  std::string schema;  // gpumem.run/1, gpumem.report/1 or gpumem.attribution/1
  std::vector<DevicePeak> devices;
  std::vector<RankPeak> ranks;
  std::optional<attribution::Document> attribution;  // an attribution document's model
};

// Reads `path` as whichever of the three formats its "schema" names; nullopt with one line in
// `error` naming the file and what it is not (inputs.cpp).
std::optional<Input> read_input(const std::string& path, std::string* error);

// An attribution document's peaks: the highest level of its snapshots on each device (a peak's,
// or a failure's where the document holds no peak there).
std::vector<DevicePeak> attribution_peaks(const attribution::Document& document);

// A before/after pair of byte counts; either side may be absent (the thing exists in one input
// only).
struct Change {
  std::optional<std::int64_t> before;
  std::optional<std::int64_t> after;
  std::int64_t delta() const { return after.value_or(0) - before.value_or(0); }
  // The growth in percent of `before`; nullopt when there is no `before` above zero.
  std::optional<double> percent() const;
};

struct DeviceChange {
  std::string label;  // "GPU 0 (NVIDIA H200)", with the node for reports
  int ordinal = 0;    // after's, for a device in both
  std::string name;
  std::string node;
  std::string uuid;
  std::string matched_by;  // uuid, ordinal, or "" for a device in one input only
  Change peak;
};

struct RankChange {
  std::string label;  // "rank 3", "local rank 1 on node-a"
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;  // only where the rank's number does not name it alone
  Change peak;
};

// An allocating stack, matched across the inputs by its frames' functions and files (not by its
// index in either document, nor by line: an edit that moves a line keeps the stack).
struct StackChange {
  std::string allocated_by;  // the innermost frame as `gpumem attribution` names it
  std::string called_from;   // its callers' functions, outward (at most three)
  Change bytes;
  std::size_t blocks_before = 0, blocks_after = 0;
};

// grew, shrank, unchanged, appeared (in `after` only) or vanished (in `before` only).
std::string change_word(const Change& change);

struct Diff {
  std::string before_path, after_path;
  std::string schema;
  std::vector<DeviceChange> devices;  // most growth first
  std::vector<RankChange> ranks;      // most growth first
  bool has_stacks = false;            // both sides carried attribution
  std::vector<StackChange> stacks;    // most growth first; unchanged ones left out
  std::vector<std::string> notes;     // what differs between the inputs beyond the numbers
};

// The comparison of `before` and `after` (same schema); `before_stacks` and `after_stacks`, when
// both are given, are the attribution documents whose peak stacks are compared (compare.cpp).
Diff compare(const Input& before, const Input& after, const attribution::Document* before_stacks,
             const attribution::Document* after_stacks);

// --fail-above: a growth limit in percent ("5%") or in bytes ("256MiB").
struct Threshold {
  std::optional<double> percent;
  std::optional<std::int64_t> bytes;
  std::string text;  // as given
};
std::optional<Threshold> parse_threshold(const std::string& text, std::string* error);
// The devices whose peak grew by more than `threshold` (a device in `after` only grew from
// nothing: by any percent).
std::vector<const DeviceChange*> over_threshold(const Diff& diff, const Threshold& threshold);

// The outputs (output.cpp).
struct TextOptions {
  std::optional<std::size_t> width;  // none: every column in full
  bool unicode = false;
};
std::string diff_text(const Diff& diff, const TextOptions& options);
std::string diff_json(const Diff& diff, const std::optional<Threshold>& threshold);
std::string diff_svg(const Diff& diff);

}  // namespace gpumem::cli::diff
