// Reading an attribution document's fields (docs/attribution.md), checked one by one: each
// error names the field by its path in the document ("snapshots[2].blocks[7].stack"). Used by
// the streaming reader (document_stream.cpp), which hands each element of the large lists over
// as soon as it is complete, and reads the rest from what it kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::attribution::fields {

namespace json = detail::json;

using Json = nlohmann::json;
using Step = std::pair<double, std::int64_t>;

// The checked-JSON reader's fields (gpumem/internal/checked_json.hpp).
using json::BadField;
using json::Object;
using json::shown;

// A document's limits: a million live blocks take about 150 MB of JSON, this leaves room for ten
// times as many; a function name or a file path is far below the token cap.
inline constexpr json::Caps kCaps{2ull << 30, 1u << 20};

// The text field `name`, which must be one of `allowed`.
std::string one_of(const Object& object, const char* name,
                   std::initializer_list<const char*> allowed);

Device read_device(const Object& object);
Frame read_frame(const Object& object);
// `value`, the list of frame indices `where` names ("stacks[3]"), each below `frames`
// (nullopt: not known yet; check_indices checks them once it is).
std::vector<std::size_t> read_stack(const Json& value, const std::string& where,
                                    std::optional<std::size_t> frames);
Block read_block(const Object& object, std::size_t stacks);
// `streamed`: the snapshot's blocks, read one by one as they came (its own list then empty);
// null: read from the object.
Snapshot read_snapshot(const Object& object, std::size_t stacks, std::vector<std::string>& warnings,
                       std::vector<Block>* streamed);
// `value`, the step `where` names, after the steps already read.
Step read_step(const Json& value, const std::string& where, const std::vector<Step>& before);
// `streamed`: as for read_snapshot, the series' steps.
Timeline read_series(const Object& object, std::vector<Step>* streamed);

// Which of the document's lists the stream has read already, element by element, into the
// Document (their lists in the JSON it kept are then empty).
struct Streamed {
  bool frames = false;
  bool stacks = false;
  bool snapshots = false;
  bool timeline = false;
};

// The indices read before the list they point into was complete (a document whose "stacks"
// come before its "frames", or its "snapshots" before its "stacks"): each stack's frames when
// `frames`, each block's and failure's stack when `stacks`. Throws BadField for the first one
// out of range.
void check_indices(const Document& document, bool frames, bool stacks);

// Reads the rest of the document from `root` (what the stream kept) into `document`.
void finish_document(const Json& root, const Streamed& streamed, Document& document);

}  // namespace gpumem::detail::attribution::fields
