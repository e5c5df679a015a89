// An attribution document (schema gpumem.attribution/1, docs/attribution.md) read back and
// checked: every field's type, every index into `frames` and `stacks`, the timeline's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpumem::cli::attribution {

inline constexpr const char* kSchema = "gpumem.attribution/1";

struct Device {
  int ordinal = 0;
  std::string uuid;
  std::string name;
  std::int64_t total_bytes = 0;
};

struct Frame {
  std::optional<std::string> function;  // null: not symbolized (then module and address)
  std::optional<std::string> file;
  std::optional<std::int64_t> line;
  std::optional<std::string> module;
  std::optional<std::string> address;
  std::string language;  // native or python
};

struct Block {
  std::string address;
  std::int64_t bytes = 0;
  std::string kind;  // device, vmm, pool, managed, graph
  double age_s = 0;
  std::optional<std::size_t> stack;  // into Document::stacks; null: none captured
  std::optional<std::int64_t> pid;
};

struct Failure {
  std::int64_t bytes = 0;
  std::string kind;
  std::optional<std::size_t> stack;
  std::string error;
  std::int64_t free_bytes = 0;
  std::int64_t total_bytes = 0;
};

struct OtherProcess {
  std::int64_t pid = 0;  // as NVML lists it
  std::string name;
  std::optional<std::int64_t> used_bytes;
  // `gpumem run`'s documents: whether the process was one of the measured command's, and its
  // rank (from its environment); nullopt in a library document, or where it is not known.
  std::optional<bool> in_run;
  std::optional<std::int64_t> rank;
};

struct Snapshot {
  std::string what;  // peak or oom
  std::optional<std::string> scope;
  std::optional<std::int64_t> pid;
  int device = 0;
  double time_s = 0;
  std::optional<std::int64_t> monotonic_ns;  // the same moment on the host's monotonic clock
  // The level: the blocks, the named parts below and what is held without a block, together.
  std::int64_t level_bytes = 0;
  std::int64_t live_bytes = 0;
  // The part of the level that is the process's context, modules and the driver's rounding (what
  // NVML showed it holding beyond its events); nullopt where the writer did not tell it apart
  // (then it is held without a block).
  std::optional<std::int64_t> context_bytes;
  std::vector<Block> blocks;
  std::optional<Failure> failure;
  std::vector<OtherProcess> other_processes;
  // How long before the failure NVML's list was read; nullopt: it was not, and who else held
  // the device is unknown.
  std::optional<double> other_processes_age_s;

  // What the level holds beyond the blocks and the named parts (never below zero; see
  // Document::warnings).
  std::int64_t held_without_block() const {
    const std::int64_t named = live_bytes + context_bytes.value_or(0);
    return level_bytes > named ? level_bytes - named : 0;
  }
};

struct Timeline {
  int device = 0;
  std::vector<std::pair<double, std::int64_t>> steps;  // [time_s, bytes], in time order
};

struct Document {
  std::string path;  // where it was read from
  std::string command;
  std::string host;
  std::vector<Device> devices;
  std::vector<Frame> frames;
  std::vector<std::vector<std::size_t>> stacks;  // into frames, innermost first
  std::vector<Snapshot> snapshots;
  std::vector<Timeline> timeline;
  // Oddities that lose nothing but deserve a word (a level below the blocks it holds).
  std::vector<std::string> warnings;

  const Device* device(int ordinal) const;
};

// Reads and checks `path`; nullopt with `error` naming the file and the field at fault
// ("snap.json: snapshots[2].blocks[7].stack: 12 is out of range (3 stacks)").
std::optional<Document> read_document(const std::string& path, std::string* error);

// The same from text already read (`path` names it in errors).
std::optional<Document> parse_document(const std::string& text, const std::string& path,
                                       std::string* error);

// The document as JSON again (gpumem.attribution/1, only the fields this gpumem reads): what the
// HTML report embeds (document_json.cpp).
nlohmann::ordered_json document_json(const Document& document);

// The snapshot `--snapshot` names: "peak" (the peak snapshot with the highest level, the first
// of equals), "oom" (the first out-of-memory snapshot) or an index into `snapshots`; nullopt
// with `error` when the document has none such.
std::optional<std::size_t> choose_snapshot(const Document& document, const std::string& which,
                                           std::string* error);

// One line naming a snapshot: "peak of scope train on GPU 0 (NVIDIA H200), pid 4242, at 1.250 s".
std::string describe(const Document& document, const Snapshot& snapshot);

// A frame as people read it: "function (file:line)", or "?? (module+address)" when it was not
// symbolized. Raw text: escape it for where it goes.
std::string frame_label(const Frame& frame);
// Only the function's name, or "??" / the address when not symbolized.
std::string frame_function(const Frame& frame);

}  // namespace gpumem::cli::attribution
