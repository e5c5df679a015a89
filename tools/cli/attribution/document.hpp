// An attribution document (gpumem.attribution/1) as `gpumem attribution` and `gpumem run` show
// it: the library's model (gpumem/internal/attribution_document.hpp: the one reader and writer of
// the format) and what the views add to it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"

namespace gpumem::cli::attribution {

using gpumem::detail::attribution::Block;
using gpumem::detail::attribution::Device;
using gpumem::detail::attribution::Document;
using gpumem::detail::attribution::document_json;
using gpumem::detail::attribution::document_text;
using gpumem::detail::attribution::Failure;
using gpumem::detail::attribution::Frame;
using gpumem::detail::attribution::frame_function;
using gpumem::detail::attribution::frame_label;
using gpumem::detail::attribution::kSchema;
using gpumem::detail::attribution::OtherProcess;
using gpumem::detail::attribution::parse_document;
using gpumem::detail::attribution::read_document;
using gpumem::detail::attribution::short_frame_label;
using gpumem::detail::attribution::short_function;
using gpumem::detail::attribution::shown_stack;
using gpumem::detail::attribution::Snapshot;
using gpumem::detail::attribution::stream_document;
using gpumem::detail::attribution::Timeline;

// The snapshot `--snapshot` names: "peak" (the peak snapshot with the highest level, the first
// of equals), "oom" (the first out-of-memory snapshot) or an index into `snapshots`; nullopt
// with `error` when the document has none such.
std::optional<std::size_t> choose_snapshot(const Document& document, const std::string& which,
                                           std::string* error);

// One line naming a snapshot: "peak of scope train on GPU 0 (NVIDIA H200), pid 4242, at 1.250 s".
std::string describe(const Document& document, const Snapshot& snapshot);

// The callers of a stack's allocating frame, outward, joined by `arrow`: the frames the library's
// policy shows (shown_stack: no allocator, runtime, binding or interpreter frames), the first
// three, then "(N more)".
std::string callers(const Document& document, const std::vector<std::size_t>& stack,
                    const std::string& arrow);
// The frame that allocated a stack, as the library's policy decides it (a stack is never empty
// here: the caller says "(an empty stack)" first).
const Frame& allocating(const Document& document, const std::vector<std::size_t>& stack);

}  // namespace gpumem::cli::attribution
