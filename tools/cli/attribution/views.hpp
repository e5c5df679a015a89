// What `gpumem attribution` shows of a snapshot: the terminal table, the SVG icicle, the pprof
// profile, and the HTML report of the whole document.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "attribution/document.hpp"
#include "terminal.hpp"

namespace gpumem::cli::attribution {

struct TextOptions {
  std::optional<std::size_t> width;  // none: every column in full
  TextStyle style;
};

// The `top` stacks holding the most at `snapshot`: bytes, share of the level, blocks, the
// innermost frame and a short caller chain; the rest as one row; what is held without a block;
// for an out-of-memory snapshot the failed request and the device's other processes
// (top_table.cpp).
std::string top_table(const Document& document, const Snapshot& snapshot, std::size_t top,
                      const TextOptions& options);

// A self-contained SVG icicle graph of `snapshot`'s live memory by stack (icicle_svg.cpp).
std::string icicle_svg(const Document& document, const Snapshot& snapshot);

// `snapshot` as a gzipped pprof profile (profile.proto): inuse_objects and inuse_space per
// stack (pprof.cpp). nullopt with `error` when zlib fails.
std::optional<std::string> pprof_profile(const Document& document, const Snapshot& snapshot,
                                         std::string* error);

// The whole document as one offline HTML page: a step timeline per device, the icicles at the
// peak and at the out-of-memory failure, the block lists (html_report.cpp).
std::string html_report(const Document& document, std::optional<std::size_t> peak,
                        std::optional<std::size_t> oom);

}  // namespace gpumem::cli::attribution
