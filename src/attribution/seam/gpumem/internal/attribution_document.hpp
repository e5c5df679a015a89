// The gpumem.attribution/1 document (docs/attribution.md) as one model that the library writes
// (gpumem::AttributionSnapshot::to_json, gpumem::attribution_json) and reads back, checked: every
// field's type, every index into `frames` and `stacks`, the timeline's order. `gpumem
// attribution`, `gpumem run --attribute` and the Python package all go through it: there is no
// other reader or writer of the format.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpumem/attribution.hpp"

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail::attribution {

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
  // Whether blocks were recorded (false: an out-of-memory failure while no counter attributed);
  // nullopt where the document does not say.
  std::optional<bool> attributed;

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
// ("snap.json: snapshots[2].blocks[7].stack: 12 is out of range (3 stacks)"). A PyTorch memory
// snapshot is read too (gpumem/internal/torch_snapshot.hpp decides which a file is).
std::optional<Document> read_document(const std::string& path, std::string* error);

// The same from text already read (`path` names it in errors).
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<Document> parse_document(
    const std::string& text, const std::string& path, std::string* error);

// The document as JSON again (gpumem.attribution/1, only the fields this gpumem reads): what the
// HTML report embeds (document_json.cpp).
nlohmann::ordered_json document_json(const Document& document);

// The same as it streams in (nlohmann's SAX parser): refused at its first byte that is not JSON,
// at a root that is not an object, at a schema that is not gpumem.attribution/1 and, once the
// schema is known, at its first field in error; the large lists (frames, stacks, each snapshot's
// blocks, the timeline's steps) read element by element, so what it holds is the Document and
// one element of JSON at a time, not the whole text and its JSON tree. `size`: the input's length
// in bytes, to tell a document cut short from a bad byte. Errors name `path` ("snap.json: not
// valid JSON at byte 2").
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<Document> stream_document(
    std::istream& input, std::uint64_t size, const std::string& path, std::string* error);
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<Document> stream_document(
    std::string_view text, const std::string& path, std::string* error);

// The document as JSON (gpumem.attribution/1): every field of the model, nothing else. What the
// files hold and what the HTML report embeds.
nlohmann::ordered_json document_json(const Document& document);
// The same as text, one space of indent; a symbol that is not UTF-8 becomes U+FFFD.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::string document_text(const Document& document);

// The library's snapshots as one document: each device once, frames and stacks merged (each
// distinct one once), the command line and host of this process. `timeline` is left empty.
Document to_document(const std::vector<AttributionSnapshot>& snapshots);

}  // namespace gpumem::detail::attribution

#pragma GCC visibility pop
