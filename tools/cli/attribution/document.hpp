// An attribution document (gpumem.attribution/1) as `gpumem attribution` and `gpumem run` show
// it: the library's model (gpumem/internal/attribution_document.hpp: the one reader and writer of
// the format) and what the views add to it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/internal/attribution_document.hpp"

namespace gpumem::cli::attribution {

using gpumem::detail::attribution::Block;
using gpumem::detail::attribution::Device;
using gpumem::detail::attribution::Document;
using gpumem::detail::attribution::document_json;
using gpumem::detail::attribution::document_text;
using gpumem::detail::attribution::Failure;
using gpumem::detail::attribution::Frame;
using gpumem::detail::attribution::kSchema;
using gpumem::detail::attribution::OtherProcess;
using gpumem::detail::attribution::parse_document;
using gpumem::detail::attribution::read_document;
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

// A frame as people read it: "function (file:line)", or "?? (module+address)" when it was not
// symbolized. Raw text: escape it for where it goes.
std::string frame_label(const Frame& frame);
// Only the function's name, or "??" / the address when not symbolized.
std::string frame_function(const Frame& frame);

// The C runtime's frames under main (_start, __libc_start_main…, and `below_main` the C
// library's frames it could not name): under every stack, telling nothing, so left out of the
// callers.
bool runtime_entry(const Frame& frame, bool below_main);
// The callers of a stack's innermost frame, outward, joined by `arrow`: the first three, then
// "(N more)"; the C runtime's frames left out.
std::string callers(const Document& document, const std::vector<std::size_t>& stack,
                    const std::string& arrow);
// A demangled function as a narrow table shows it: its parameter list elided
// ("load_weights(…)") and the compiler's clone suffixes (" [clone .isra.0]") left out.
std::string short_function(std::string name, const std::string& ellipsis);
// The allocating frame in a narrow table: the function shortened, the file by its name alone,
// the line kept ("load_weights(…) (oom_program.cpp:43)").
std::string short_frame_label(const Frame& frame, const std::string& ellipsis);

}  // namespace gpumem::cli::attribution
